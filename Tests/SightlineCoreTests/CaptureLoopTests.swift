import Foundation
import Testing
@testable import SightlineCore
@testable import SightlinePipeline
@testable import SightlineHTTP

@Suite struct CaptureLoopTests {
    /// A source that has been failing long enough to back off for seconds,
    /// switched to another: the new one is tried at once, and when it fails
    /// too its first retry is 1 s away (scaled), not the old source's backoff.
    @Test func aSwitchedToSourceStartsWithAFreshBackoff() throws {
        let old = FlakySource()
        old.lock.withLock { old.broken = true }
        let loop = CaptureLoop(source: old, spec: "old", mailbox: FrameMailbox(), stats: PipelineStats(),
                               logger: quietLogger(), backoffScale: 0.02)
        loop.start()
        defer { loop.stop() }
        // 1 + 2 + 4 + 8 s of (scaled) waiting: the next retry is 16 s away.
        #expect(waitUntil { old.lock.withLock { old.opens } >= 5 })
        #expect(waitUntil { (loop.status.retryInSeconds ?? 0) > 8 })

        let fresh = FlakySource()
        fresh.lock.withLock { fresh.broken = true }
        loop.switchSource(to: fresh, spec: "fresh")
        #expect(waitUntil(seconds: 5) { fresh.lock.withLock { fresh.opens } >= 1 })
        #expect(loop.status.spec == "fresh")
        #expect(waitUntil { loop.status.state == .noSignal })
        let retry = try #require(loop.status.retryInSeconds)
        #expect(retry <= CaptureLoop.initialBackoff, "the fresh source waits \(retry) s before its first retry")
        fresh.lock.withLock { fresh.broken = false }
        #expect(waitUntil { loop.status.state == .live })
    }
}
