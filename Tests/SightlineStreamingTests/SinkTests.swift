import Foundation
import Logging
import Synchronization
import Testing
@testable import SightlineSupport
@testable import SightlineVision
@testable import SightlinePipeline
@testable import SightlineHTTP
@testable import SightlineStreaming
import SightlineTesting
import SightlineHTTPTesting

/// A stage that reports one template detection per frame, labelled with the frame's seq.
final class SeqStage: PipelineStage {
    let stage: StageName? = .template
    func process(_ context: inout FrameContext) throws {
        context.detections.append(Detection.template(label: "seq\(context.frame.seq)", score: 0.9, scale: 1, angle: 0,
                                            box: NormalizedBox(x: 0.1, y: 0.1, w: 0.2, h: 0.2)))
    }
}

/// Records every frame it is handed, on the pipeline thread, and signals `delivered` for each.
final class RecordingSink: FrameSink {
    let name = "recording"
    private let frames = Locked<[ProcessedFrame]>([])
    let delivered = DispatchSemaphore(value: 0)
    func deliver(_ frame: ProcessedFrame) {
        frames.withLock { $0.append(frame) }
        delivered.signal()
    }
    var received: [ProcessedFrame] { frames.withLock { $0 } }
    var counts: SinkCounts {
        let n = UInt64(received.count)
        return SinkCounts(delivered: n, consumed: n)
    }
}

/// A consumer that never finishes a frame until released; `took` is
/// signalled as it starts on each.
final class StuckConsumer: FrameConsumer {
    let release: DispatchSemaphore
    let taken: Counter
    let took: DispatchSemaphore
    init(release: DispatchSemaphore, taken: Counter, took: DispatchSemaphore = DispatchSemaphore(value: 0)) {
        self.release = release
        self.taken = taken
        self.took = took
    }
    func consume(_ frame: ProcessedFrame) {
        taken.add()
        took.signal()
        release.wait()
    }
}

@Suite struct SinkTests {
    @Test func mailboxKeepsTheNewestAndCountsSkips() {
        let mailbox = SinkMailbox<Int>()
        #expect(mailbox.put(1))
        #expect(mailbox.put(2))
        #expect(mailbox.put(3))
        #expect(mailbox.take(timeout: 0.1) == 3)
        mailbox.consumed()
        #expect(mailbox.take(timeout: 0.05) == nil)
        #expect(mailbox.counts == SinkCounts(delivered: 3, consumed: 1, skipped: 2))
        mailbox.close()
        #expect(!mailbox.put(4))
        #expect(mailbox.take(timeout: 5) == nil)
    }

    @Test("a mailbox of 3 slots hands over in order, drops the oldest past 3 and counts it skipped")
    func mailboxWithSlotsKeepsTheNewestInOrder() {
        let mailbox = SinkMailbox<Int>(capacity: 3)
        for value in 1...5 { #expect(mailbox.put(value)) }
        var taken: [Int] = []
        while let value = mailbox.take(timeout: 0.05) {
            taken.append(value)
            mailbox.consumed()
        }
        #expect(taken == [3, 4, 5])
        #expect(mailbox.counts == SinkCounts(delivered: 5, consumed: 3, skipped: 2))
        #expect(mailbox.put(6))
        #expect(mailbox.take(timeout: 0.1) == 6)
    }

    /// Driven frame by frame: if a stuck sink could block `deliver`, this
    /// test would hang at the second frame (and fail by its time limit).
    @Test(.timeLimit(.minutes(1)))
    func everySinkGetsEveryFrameAndAStuckOneSkips() throws {
        let stats = PipelineStats()
        let recorder = RecordingSink()
        let release = DispatchSemaphore(value: 0)
        let taken = Counter()
        let took = DispatchSemaphore(value: 0)
        let stuck = ThreadedSink(name: "stuck", consumer: StuckConsumer(release: release, taken: taken, took: took))
        try stuck.start()
        let pipeline = Pipeline(mailbox: FrameMailbox(), stats: stats, stages: [SeqStage()], encoder: try JPEGEncoder(),
                                sinks: [stuck, recorder], logger: quietLogger(), budgetSeconds: { 0.033 })
        pipeline.handle(frame(1))
        #expect(took.wait(timeout: .now() + 10) == .success)  // the stuck sink holds frame 1 from here on
        for seq in 2...60 { pipeline.handle(frame(UInt64(seq))) }

        let received = recorder.received
        #expect(received.map(\.seq) == Array(1...60))
        #expect(received.allSatisfy { $0.detections.map(\.label) == ["seq\($0.seq)"] })
        // Neither sink takes JPEG: no frame was encoded.
        #expect(received.allSatisfy { $0.stageSeconds[.template] != nil && $0.stageSeconds[.encode] == nil })
        #expect(stats.snapshot().processed == 60)
        // The stuck sink still holds frame 1; of the rest, only the newest waits.
        #expect(taken.value == 1)
        let counts = stuck.counts
        #expect(counts.delivered == 60)
        #expect(counts.consumed == 0)
        #expect(counts.skipped == 58)
        // Released, it finishes that frame and takes the newest (60), never the skipped ones.
        release.signal()
        #expect(took.wait(timeout: .now() + 10) == .success)
        #expect(taken.value == 2 && stuck.counts.consumed == 1)
        release.signal()
        stuck.stop()  // it finishes frame 60 first
        #expect(stuck.counts.consumed == 2 && taken.value == 2)
    }

    /// On virtual time: the capture loop paces 100 fps on a `ManualClock`; the
    /// test moves it on a frame at a time, once the last frame went through.
    @Test(.timeLimit(.minutes(1)))
    func aLiveGraphFeedsItsSinksWhileOneIsStuck() throws {
        let clock = ManualClock()
        let mailbox = FrameMailbox()
        let stats = PipelineStats()
        let recorder = RecordingSink()
        let release = DispatchSemaphore(value: 0)
        let stuck = ThreadedSink(name: "stuck", consumer: StuckConsumer(release: release, taken: Counter()))
        try stuck.start()
        let loop = CaptureLoop(source: FlakySource(), spec: "fast", mailbox: mailbox, stats: stats, logger: quietLogger(),
                               clock: clock)
        let pipeline = Pipeline(mailbox: mailbox, stats: stats, stages: [SeqStage()], encoder: try JPEGEncoder(),
                                sinks: [stuck, recorder], logger: quietLogger(), clock: clock, budgetSeconds: { 0.010 })
        loop.start()
        pipeline.start()
        for _ in 0..<30 {
            #expect(recorder.delivered.wait(timeout: .now() + 10) == .success)
            #expect(clock.waitForSleepers(1))
            clock.advance(by: 0.01)
        }
        #expect(recorder.delivered.wait(timeout: .now() + 10) == .success)
        loop.stop()
        pipeline.stop()
        let processed = stats.snapshot().processed
        #expect(processed == 31 && UInt64(recorder.received.count) == processed)
        #expect(recorder.received.allSatisfy { $0.detections.first?.label == "seq\($0.seq)" })
        #expect(stuck.counts.delivered == processed && stuck.counts.skipped >= processed - 2)
        release.signal()
        release.signal()
        stuck.stop()
    }

    @Test func streamSinkMakesTheJSONAndWakesTheServer() throws {
        let stats = PipelineStats()
        let sink = StreamSink(stats: stats)
        let wakes = Counter()
        sink.connect(wake: { wakes.add() })
        let frame = ProcessedFrame(seq: 5, capturedAt: 2, capturedNanos: 0, width: 40, height: 30, jpeg: Data([1, 2, 3]),
                                   detections: [Detection.template(label: "logo", score: 0.8, scale: 1, angle: 0,
                                                          box: NormalizedBox(x: 0, y: 0, w: 0.5, h: 0.5))])
        sink.deliver(frame)
        sink.connect(wake: nil)
        sink.deliver(frame)
        #expect(wakes.value == 1)
        let latest = try #require(sink.slot.latest)
        let sent = try #require(latest.send(.stream))
        #expect(latest.index == 2 && sent.jpeg == Data([1, 2, 3]))
        let json = try JSONSerialization.jsonObject(with: sent.json) as! [String: Any]
        #expect(json["jpegBytes"] as? Int == 3)
        #expect((json["detections"] as? [[String: Any]])?.first?["label"] as? String == "logo")
        #expect(sink.counts.delivered == 2)
    }

    @Test func theWatchdogNeedsFramesAndAResponsiveServiceThread() {
        let sink = WatchdogSink(interval: nil)
        #expect(!sink.healthy(within: 60))
        sink.deliver(ProcessedFrame(seq: 1, capturedAt: 1, capturedNanos: 0, width: 4, height: 4, jpeg: Data([1]),
                                    detections: []))
        #expect(sink.healthy(within: 60))
        let serviceAnswers = Locked(true)
        sink.alsoRequire { _ in serviceAnswers.withLock { $0 } }
        #expect(sink.healthy(within: 60))
        serviceAnswers.withLock { $0 = false }
        #expect(!sink.healthy(within: 60))
    }

    @Test func aStreamServerIsResponsiveWhileItsServiceThreadWakes() throws {
        let clock = ManualClock()
        var options = StreamServer.Options()
        options.host = "127.0.0.1"
        options.port = 0
        options.clock = clock
        let auth = AuthGuard.testing()
        let streams = CameraStreams(cameras: [CameraFeed(name: "camera", frames: LatestFrameSlot(), stats: PipelineStats())],
                                    logger: Logger(label: "test"))
        let server = StreamServer(options: options, streams: streams, logger: Logger(label: "test"),
                                  router: Router(routes: [], authorize: { auth.refusal(for: $0, needs: $1) }))
        try server.start()
        server.wake()
        // The service thread answers the wake-up (a thread getting there, not time passing).
        #expect(waitUntil { server.serviceResponsive(within: 60) })
        // A service thread that no longer runs (here: stopped) stops counting as responsive.
        server.stop()
        server.wake()
        clock.advance(by: 0.3)
        #expect(!server.serviceResponsive(within: 0.2))
        #expect(server.serviceResponsive(within: 0.4))
    }
}
