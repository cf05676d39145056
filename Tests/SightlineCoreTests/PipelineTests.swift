import Foundation
import Logging
import Testing
@testable import SightlineCore
@testable import SightlineVision
@testable import SightlineSupport
@testable import SightlinePipeline
@testable import SightlineHTTP

/// A source whose frames are flat grey and which fails while `broken` is set.
final class FlakySource: FrameSource, @unchecked Sendable {
    let lock = NSLock()
    var broken = false
    var opens = 0
    var name: String { "flaky" }
    var pacing: SourcePacing { .fixedRate }
    func open() throws -> SourceFormat {
        try lock.withLock {
            opens += 1
            if broken { throw SourceError.cannotOpen("unplugged") }
        }
        return SourceFormat(width: 64, height: 48, fps: 100, pixelFormat: "test")
    }
    func nextImage() throws -> CapturedImage {
        if lock.withLock({ broken }) { throw SourceError.vanished("ENODEV") }
        return CapturedImage(image: ImageBuffer(width: 64, height: 48))
    }
    func close() {}
}

/// A stage that sleeps, to make the pipeline slower than the frame budget.
final class SleepStage: PipelineStage {
    let stage: StageName? = .faces
    let seconds: Double
    init(seconds: Double) { self.seconds = seconds }
    func process(_ context: inout FrameContext) throws {
        Thread.sleep(forTimeInterval: seconds)
    }
}

func quietLogger() -> Logger {
    var logger = Logger(label: "test")
    logger.logLevel = .critical
    return logger
}

func frame(_ seq: UInt64) -> Frame {
    Frame(seq: seq, capturedAt: 0, capturedNanos: MonotonicClock.nanos(), image: ImageBuffer(width: 8, height: 8))
}

@Suite struct PipelineTests {
    @Test func mailboxKeepsOnlyTheNewest() {
        let mailbox = FrameMailbox()
        #expect(mailbox.put(frame(1)) == nil)
        #expect(mailbox.put(frame(2))?.seq == 1)
        #expect(mailbox.take(timeout: 0.1)?.seq == 2)
        #expect(mailbox.take(timeout: 0.05) == nil)
        mailbox.close()
        #expect(mailbox.take(timeout: 5) == nil)
    }

    @Test func captureLoopGoesToNoSignalAndRecovers() throws {
        let source = FlakySource()
        let mailbox = FrameMailbox()
        let stats = PipelineStats()
        let loop = CaptureLoop(source: source, spec: "flaky", mailbox: mailbox, stats: stats,
                               logger: quietLogger(), backoffScale: 0.05)
        loop.start()
        defer { loop.stop() }
        #expect(waitUntil { loop.status.state == .live && stats.snapshot().captured > 5 })
        source.lock.withLock { source.broken = true }
        #expect(waitUntil { loop.status.state == .noSignal })
        #expect(loop.status.detail.contains("ENODEV") || loop.status.detail.contains("unplugged"))
        // Reopen attempts back off: 1 s, 2 s, 4 s (scaled by 0.05) ...
        #expect(waitUntil { source.lock.withLock { source.opens } >= 3 })
        #expect(loop.status.retryInSeconds != nil)
        source.lock.withLock { source.broken = false }
        let before = stats.snapshot().captured
        #expect(waitUntil { loop.status.state == .live && stats.snapshot().captured > before + 5 })
    }

    @Test func slowPipelineDropsAndSendsTheNewest() throws {
        let mailbox = FrameMailbox()
        let stats = PipelineStats()
        let source = FlakySource()   // 100 fps: budget 10 ms
        let loop = CaptureLoop(source: source, spec: "fast", mailbox: mailbox, stats: stats, logger: quietLogger())
        let pipeline = Pipeline(mailbox: mailbox, stats: stats, stages: [SleepStage(seconds: 0.015)],
                                encoder: try JPEGEncoder(), sinks: [], logger: quietLogger(),
                                budgetSeconds: { 0.010 })
        loop.start()
        pipeline.start()
        Thread.sleep(forTimeInterval: 1.0)
        loop.stop()
        pipeline.stop()
        let snapshot = stats.snapshot()
        let dropped = (snapshot.drops[.superseded] ?? 0) + (snapshot.drops[.late] ?? 0)
        #expect(snapshot.processed > 10)
        #expect(dropped > 0)
        #expect(snapshot.captured >= snapshot.processed + dropped)
        // Nothing queued: what was not processed was counted as dropped.
        #expect(snapshot.captured - snapshot.processed - dropped <= 1)
    }

    @Test func frameMessageCarriesTheJPEGLength() throws {
        let stats = PipelineStats()
        let stream = StreamSink(stats: stats)
        let pipeline = Pipeline(mailbox: FrameMailbox(), stats: stats, stages: [], encoder: try JPEGEncoder(),
                                sinks: [stream], logger: quietLogger(), budgetSeconds: { 0.033 })
        pipeline.handle(Frame(seq: 9, capturedAt: 1.5, capturedNanos: 0,
                                                 image: ImageBuffer(width: 32, height: 24),
                                                 groundTruth: [GroundTruthBox(label: "demo", x: 8, y: 6, w: 16, h: 12)]))
        let encoded = try #require(stream.slot.latest)
        #expect(encoded.seq == 9 && encoded.index == 1)
        let json = try JSONSerialization.jsonObject(with: encoded.json) as! [String: Any]
        #expect(json["type"] as? String == "frame")
        #expect(json["seq"] as? Int == 9)
        #expect(json["jpegBytes"] as? Int == encoded.jpeg.count)
        #expect(json["width"] as? Int == 32 && json["height"] as? Int == 24)
        let truth = (json["groundTruth"] as? [[String: Any]])?.first?["box"] as? [String: Double]
        #expect(truth == ["x": 0.25, "y": 0.25, "w": 0.5, "h": 0.5])
    }
}

/// Polls `condition` for up to `seconds`.
func waitUntil(seconds: Double = 10, _ condition: () -> Bool) -> Bool {
    let end = Date(timeIntervalSinceNow: seconds)
    while Date() < end {
        if condition() { return true }
        Thread.sleep(forTimeInterval: 0.01)
    }
    return condition()
}
