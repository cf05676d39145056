import Foundation
import Testing
@testable import SightlineVision
@testable import SightlinePipeline
import SightlineTesting

@Suite struct ManualClockTests {
    @Test func aSleeperWakesOnlyWhenTheClockReachesItsDeadline() {
        let clock = ManualClock()
        let start = clock.nanos()
        let woke = DispatchSemaphore(value: 0)
        let thread = Thread {
            clock.sleep(until: start + 1_000_000_000)
            woke.signal()
        }
        thread.start()
        #expect(clock.waitForSleepers(1))
        #expect(clock.nextDeadline == start + 1_000_000_000)
        clock.advance(by: 0.5)
        #expect(clock.sleeping == 1)          // not yet: 0.5 s to go
        clock.advance(by: 0.5)
        #expect(clock.sleeping == 0)
        #expect(woke.wait(timeout: .now() + 10) == .success)
        #expect(clock.nanos() == start + 1_000_000_000)
        #expect(clock.wallSeconds() == 1_750_000_001)
        // A deadline already passed does not sleep.
        clock.sleep(until: start)
    }

    @Test func wakeSleepersEndsEverySleepEarly() {
        let clock = ManualClock()
        let woke = DispatchSemaphore(value: 0)
        for _ in 0..<2 {
            Thread { clock.sleep(until: clock.nanos() + 60_000_000_000); woke.signal() }.start()
        }
        #expect(clock.waitForSleepers(2))
        clock.wakeSleepers()
        #expect(woke.wait(timeout: .now() + 10) == .success && woke.wait(timeout: .now() + 10) == .success)
        #expect(clock.sleeping == 0)
    }

    /// The frame budget on virtual time: a frame that waited behind a busy
    /// pipeline is dropped as late once its age and the processing time pass two budgets.
    @Test func aFrameThatWaitedPastTwoBudgetsIsDroppedAsLate() throws {
        let clock = ManualClock()
        let stats = PipelineStats()
        let pipeline = Pipeline(mailbox: FrameMailbox(), stats: stats, stages: [], encoder: try JPEGEncoder(),
                                sinks: [], logger: quietLogger(), clock: clock, budgetSeconds: { 0.010 })
        func captured() -> Frame {
            Frame(seq: 1, capturedAt: clock.wallSeconds(), capturedNanos: clock.nanos(), image: ImageBuffer(width: 8, height: 8))
        }
        let fresh = captured()
        clock.advance(by: 0.019)
        pipeline.handle(fresh, waitedBehindBusyPipeline: true)   // 19 ms old: within 20 ms
        #expect(stats.snapshot().processed == 1 && (stats.snapshot().drops[.late] ?? 0) == 0)
        let stale = captured()
        clock.advance(by: 0.021)
        pipeline.handle(stale, waitedBehindBusyPipeline: true)   // 21 ms old
        #expect(stats.snapshot().processed == 1 && (stats.snapshot().drops[.late] ?? 0) == 1)
        let waitedNot = captured()
        clock.advance(by: 1)
        pipeline.handle(waitedNot)   // the pipeline was idle: always processed
        #expect(stats.snapshot().processed == 2)
    }
}
