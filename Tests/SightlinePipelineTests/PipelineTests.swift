import Foundation
import Logging
import Testing
@testable import SightlineVision
@testable import SightlinePipeline
import SightlineTesting

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

    /// On virtual time: the capture thread sleeps on a `ManualClock`, and the
    /// test moves the clock on once the thread is asleep (`waitForSleepers`).
    @Test func captureLoopGoesToNoSignalAndRecovers() throws {
        let clock = ManualClock()
        let source = FlakySource()   // 100 fps: a frame every 10 ms
        let mailbox = FrameMailbox()
        let stats = PipelineStats()
        let loop = CaptureLoop(source: source, spec: "flaky", mailbox: mailbox, stats: stats,
                               logger: quietLogger(), clock: clock)
        loop.start()
        defer { loop.stop() }
        func step(_ seconds: Double) {
            #expect(clock.waitForSleepers(1))
            clock.advance(by: seconds)
        }
        // The first frame at once, then one each 10 ms of clock time.
        for _ in 0..<5 { step(0.01) }
        #expect(clock.waitForSleepers(1))
        #expect(loop.status.state == .live && stats.snapshot().captured == 6)
        source.lock.withLock { source.broken = true }
        step(0.01)
        #expect(clock.waitForSleepers(1))
        #expect(loop.status.state == .noSignal)
        #expect(loop.status.detail.contains("ENODEV"))
        #expect(loop.status.retryInSeconds == 1)
        // Reopen attempts back off: 1 s, 2 s, 4 s ... and not one sooner.
        #expect(source.lock.withLock { source.opens } == 1)
        step(1)
        #expect(clock.waitForSleepers(1))
        #expect(source.lock.withLock { source.opens } == 2)
        #expect(loop.status.detail.contains("unplugged") && loop.status.retryInSeconds == 2)
        step(1.5)
        #expect(clock.waitForSleepers(1))
        #expect(source.lock.withLock { source.opens } == 2 && loop.status.retryInSeconds == 0.5)
        step(0.5)
        #expect(clock.waitForSleepers(1))
        #expect(source.lock.withLock { source.opens } == 3 && loop.status.retryInSeconds == 4)
        source.lock.withLock { source.broken = false }
        let before = stats.snapshot().captured
        step(4)
        for _ in 0..<5 { step(0.01) }
        #expect(clock.waitForSleepers(1))
        #expect(source.lock.withLock { source.opens } == 4)
        #expect(loop.status.state == .live && stats.snapshot().captured == before + 6)
    }

    /// On virtual time: the capture loop paces 100 fps on a `ManualClock`, and
    /// each frame's stage takes 15 ms of it, so only the pipeline moves time on.
    @Test(.timeLimit(.minutes(1)))
    func slowPipelineDropsAndSendsTheNewest() throws {
        let clock = ManualClock()
        let mailbox = FrameMailbox()
        let stats = PipelineStats()
        let source = FlakySource()   // 100 fps: budget 10 ms
        let stage = CostlyStage(clock: clock, seconds: 0.015, frames: 60)
        let loop = CaptureLoop(source: source, spec: "fast", mailbox: mailbox, stats: stats, logger: quietLogger(),
                               clock: clock)
        // A JPEG viewer, as this test always had: each frame's encode is real time the
        // pipeline spends after its stage moved the clock on, in which the capture loop
        // delivers the frames that came due (without it the pipeline may take each at once).
        let stream = StreamSink(stats: stats)
        stream.slot.viewers.change(.stream, by: 1)
        let pipeline = Pipeline(mailbox: mailbox, stats: stats, stages: [stage],
                                encoder: try JPEGEncoder(), sinks: [stream], logger: quietLogger(), clock: clock,
                                budgetSeconds: { 0.010 })
        loop.start()
        pipeline.start()
        #expect(stage.done.wait(timeout: .now() + 30) == .success)
        loop.stop()
        pipeline.stop()
        let snapshot = stats.snapshot()
        let dropped = (snapshot.drops[.superseded] ?? 0) + (snapshot.drops[.late] ?? 0)
        #expect(snapshot.processed >= 60)
        #expect(dropped > 0)
        #expect(snapshot.captured >= snapshot.processed + dropped)
        // Nothing queued: what was not processed was counted as dropped.
        #expect(snapshot.captured - snapshot.processed - dropped <= 1)
    }

    @Test func frameMessageCarriesTheJPEGLength() throws {
        let stats = PipelineStats()
        let stream = StreamSink(stats: stats)
        stream.slot.viewers.change(.stream, by: 1)
        let pipeline = Pipeline(mailbox: FrameMailbox(), stats: stats, stages: [], encoder: try JPEGEncoder(),
                                sinks: [stream], logger: quietLogger(), budgetSeconds: { 0.033 })
        pipeline.handle(Frame(seq: 9, capturedAt: 1.5, capturedNanos: 0,
                                                 image: ImageBuffer(width: 32, height: 24),
                                                 groundTruth: [GroundTruthBox(label: "demo", x: 8, y: 6, w: 16, h: 12)]))
        let encoded = try #require(stream.slot.latest)
        #expect(encoded.seq == 9 && encoded.index == 1)
        let sent = try #require(encoded.send(.stream))
        let json = try JSONSerialization.jsonObject(with: sent.json) as! [String: Any]
        #expect(json["type"] as? String == "frame")
        #expect(json["seq"] as? Int == 9)
        #expect(json["jpegBytes"] as? Int == sent.jpeg.count)
        #expect(json["width"] as? Int == 32 && json["height"] as? Int == 24)
        let truth = (json["groundTruth"] as? [[String: Any]])?.first?["box"] as? [String: Double]
        #expect(truth == ["x": 0.25, "y": 0.25, "w": 0.5, "h": 0.5])
    }
}
