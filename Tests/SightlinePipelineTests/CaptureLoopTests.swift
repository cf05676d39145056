import Foundation
import Testing
@testable import SightlinePipeline
import SightlineTesting

@Suite struct CaptureLoopTests {
    /// A source that has been failing long enough to back off for seconds,
    /// switched to another: the new one is tried at once, and when it fails
    /// too its first retry is 1 s away, not the old source's backoff. On
    /// virtual time: the test moves a `ManualClock` on once the capture thread
    /// sleeps on it.
    @Test func aSwitchedToSourceStartsWithAFreshBackoff() throws {
        let clock = ManualClock()
        let old = FlakySource()
        old.lock.withLock { old.broken = true }
        let loop = CaptureLoop(source: old, spec: "old", mailbox: FrameMailbox(), stats: PipelineStats(),
                               logger: quietLogger(), clock: clock)
        loop.start()
        defer { loop.stop() }
        // 1 + 2 + 4 + 8 s of waiting: the next retry is 16 s away.
        for backoff in [1.0, 2, 4, 8] {
            #expect(clock.waitForSleepers(1))
            #expect(loop.status.retryInSeconds == backoff)
            clock.advance(by: backoff)
        }
        #expect(clock.waitForSleepers(1))
        #expect(old.lock.withLock { old.opens } == 5)
        #expect(loop.status.retryInSeconds == 16)

        let fresh = FlakySource()
        fresh.lock.withLock { fresh.broken = true }
        loop.switchSource(to: fresh, spec: "fresh")
        // The switch wakes the capture thread: the fresh source is tried with no time passing.
        #expect(clock.waitForSleepers(1))
        #expect(fresh.lock.withLock { fresh.opens } == 1)
        #expect(loop.status.spec == "fresh")
        #expect(loop.status.state == .noSignal)
        let retry = try #require(loop.status.retryInSeconds)
        #expect(retry == CaptureLoop.initialBackoff, "the fresh source waits \(retry) s before its first retry")
        fresh.lock.withLock { fresh.broken = false }
        clock.advance(by: retry)
        #expect(clock.waitForSleepers(1))   // live: asleep until its next frame's time
        #expect(loop.status.state == .live && fresh.lock.withLock { fresh.opens } == 2)
    }

    /// A stopped loop is freed with its source once the camera lets go of it:
    /// the capture thread's closure held the loop, and the loop held the
    /// thread, so every removed camera's loop, source and frames stayed.
    @Test func aStoppedLoopAndItsSourceAreFreed() {
        weak var freedLoop: CaptureLoop?
        weak var freedSource: FlakySource?
        do {
            let source = FlakySource()
            let loop = CaptureLoop(source: source, spec: "flaky", mailbox: FrameMailbox(), stats: PipelineStats(),
                                   logger: quietLogger())
            freedLoop = loop
            freedSource = source
            loop.start()
            loop.stop()
            loop.stop()   // a second stop returns at once
        }
        // The capture thread lets go of its closure as it exits, just after `stop` returns.
        for _ in 0..<500 where freedLoop != nil { Thread.sleep(forTimeInterval: 0.01) }
        #expect(freedLoop == nil, "the stopped capture loop is still referenced")
        #expect(freedSource == nil, "the stopped loop's source is still referenced")
    }
}
