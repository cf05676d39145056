import Foundation
import Logging
import Synchronization
import Testing
@testable import SightlineCore
@testable import SightlineVision
@testable import SightlinePipeline
@testable import SightlineHTTP

/// A stage that reports one template detection per frame, labelled with the frame's seq.
final class SeqStage: PipelineStage {
    let stage: StageName? = .template
    func process(_ context: inout FrameContext) throws {
        context.detections.append(Detection.template(label: "seq\(context.frame.seq)", score: 0.9, scale: 1, angle: 0,
                                            box: NormalizedBox(x: 0.1, y: 0.1, w: 0.2, h: 0.2)))
    }
}

/// Records every frame it is handed, on the pipeline thread.
final class RecordingSink: FrameSink {
    let name = "recording"
    private let frames = Mutex<[ProcessedFrame]>([])
    func deliver(_ frame: ProcessedFrame) { frames.withLock { $0.append(frame) } }
    var received: [ProcessedFrame] { frames.withLock { $0 } }
    var counts: SinkCounts {
        let n = UInt64(received.count)
        return SinkCounts(delivered: n, consumed: n)
    }
}

/// A count shared between threads.
final class Counter: Sendable {
    private let count = Atomic<Int>(0)
    func add() { count.add(1, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}

/// A consumer that never finishes its first frame until released.
final class StuckConsumer: FrameConsumer {
    let release: DispatchSemaphore
    let taken: Counter
    init(release: DispatchSemaphore, taken: Counter) {
        self.release = release
        self.taken = taken
    }
    func consume(_ frame: ProcessedFrame) {
        taken.add()
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

    /// Driven frame by frame: if a stuck sink could block `deliver`, this
    /// test would hang at the second frame (and fail by its time limit).
    @Test(.timeLimit(.minutes(1)))
    func everySinkGetsEveryFrameAndAStuckOneSkips() throws {
        let stats = PipelineStats()
        let recorder = RecordingSink()
        let release = DispatchSemaphore(value: 0)
        let taken = Counter()
        let stuck = ThreadedSink(name: "stuck", consumer: StuckConsumer(release: release, taken: taken))
        try stuck.start()
        let pipeline = Pipeline(mailbox: FrameMailbox(), stats: stats, stages: [SeqStage()], encoder: try JPEGEncoder(),
                                sinks: [stuck, recorder], logger: quietLogger(), budgetSeconds: { 0.033 })
        pipeline.handle(frame(1))
        #expect(waitUntil { taken.value == 1 })  // the stuck sink holds frame 1 from here on
        for seq in 2...60 { pipeline.handle(frame(UInt64(seq))) }

        let received = recorder.received
        #expect(received.map(\.seq) == Array(1...60))
        #expect(received.allSatisfy { $0.detections.map(\.label) == ["seq\($0.seq)"] })
        #expect(received.allSatisfy { $0.stageSeconds[.template] != nil && $0.stageSeconds[.encode] != nil })
        #expect(stats.snapshot().processed == 60)
        // The stuck sink still holds frame 1; of the rest, only the newest waits.
        #expect(taken.value == 1)
        let counts = stuck.counts
        #expect(counts.delivered == 60)
        #expect(counts.consumed == 0)
        #expect(counts.skipped == 58)
        // Released, it finishes that frame and takes the newest (60), never the skipped ones.
        release.signal()
        #expect(waitUntil { taken.value == 2 && stuck.counts.consumed == 1 })
        release.signal()
        #expect(waitUntil { stuck.counts.consumed == 2 })
        stuck.stop()
    }

    @Test func aLiveGraphFeedsItsSinksWhileOneIsStuck() throws {
        let mailbox = FrameMailbox()
        let stats = PipelineStats()
        let recorder = RecordingSink()
        let release = DispatchSemaphore(value: 0)
        let stuck = ThreadedSink(name: "stuck", consumer: StuckConsumer(release: release, taken: Counter()))
        try stuck.start()
        let loop = CaptureLoop(source: FlakySource(), spec: "fast", mailbox: mailbox, stats: stats, logger: quietLogger())
        let pipeline = Pipeline(mailbox: mailbox, stats: stats, stages: [SeqStage()], encoder: try JPEGEncoder(),
                                sinks: [stuck, recorder], logger: quietLogger(), budgetSeconds: { 0.010 })
        loop.start()
        pipeline.start()
        #expect(waitUntil { recorder.received.count >= 30 })
        loop.stop()
        pipeline.stop()
        let processed = stats.snapshot().processed
        #expect(UInt64(recorder.received.count) == processed)
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
        #expect(latest.index == 2 && latest.jpeg == Data([1, 2, 3]))
        let json = try JSONSerialization.jsonObject(with: latest.json) as! [String: Any]
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
        let serviceAnswers = Mutex(true)
        sink.alsoRequire { _ in serviceAnswers.withLock { $0 } }
        #expect(sink.healthy(within: 60))
        serviceAnswers.withLock { $0 = false }
        #expect(!sink.healthy(within: 60))
    }

    @Test func aStreamServerIsResponsiveWhileItsServiceThreadWakes() throws {
        var options = StreamServer.Options()
        options.host = "127.0.0.1"
        options.port = 0
        let auth = AuthGuard.testing()
        let server = StreamServer(options: options, frames: LatestFrameSlot(), stats: PipelineStats(),
                                  logger: Logger(label: "test"),
                                  router: Router(routes: [], authorize: { auth.refusal(for: $0, needs: $1) }))
        try server.start()
        server.wake()
        var waited = 0
        while !server.serviceResponsive(within: 60) && waited < 500 {
            Thread.sleep(forTimeInterval: 0.01)
            waited += 1
        }
        #expect(server.serviceResponsive(within: 60))
        // A service thread that no longer runs (here: stopped) stops counting as responsive.
        server.stop()
        server.wake()
        Thread.sleep(forTimeInterval: 0.3)
        #expect(!server.serviceResponsive(within: 0.2))
    }
}
