import Foundation
import SightlineSupport

/// A clock for tests: its time stands still until `advance(by:)`. A thread in
/// `sleep(until:)` stays asleep until the clock has been advanced to its
/// deadline (or `wakeSleepers()` is called); `waitForSleepers(_:)` lets the
/// test wait until the threads it drives are asleep on the clock, so a test
/// steps a component through time without waiting for any.
///
/// `@unchecked Sendable`: `now`, `sleepers` and `nextSleeper` are guarded by
/// `condition` (an `NSCondition`, which every sleeper waits on).
public final class ManualClock: SightlineClock, @unchecked Sendable {
    private let condition = NSCondition()
    private var now: UInt64
    private let startNanos: UInt64
    private let startWallSeconds: Double
    /// The deadline of each thread asleep on the clock, by sleeper; a sleeper
    /// is removed when its deadline is reached or the sleepers are woken.
    private var sleepers: [Int: UInt64] = [:]
    private var nextSleeper = 0

    /// Starts at `nanos` of monotonic time (not 0, which some components read as "never")
    /// and `wallSeconds` of wall time.
    public init(nanos: UInt64 = 1_000_000_000, wallSeconds: Double = 1_750_000_000) {
        now = nanos
        startNanos = nanos
        startWallSeconds = wallSeconds
    }

    public func nanos() -> UInt64 {
        condition.withLock { now }
    }

    public func wallSeconds() -> Double {
        condition.withLock { startWallSeconds + Double(now - startNanos) / 1e9 }
    }

    public func sleep(until deadline: UInt64) {
        condition.withLock {
            guard deadline > now else { return }
            let id = nextSleeper
            nextSleeper += 1
            sleepers[id] = deadline
            condition.broadcast()
            while sleepers[id] != nil { condition.wait() }
        }
    }

    public func wakeSleepers() {
        condition.withLock {
            sleepers.removeAll()
            condition.broadcast()
        }
    }

    /// Moves time on by `seconds` (nanosecond steps), waking every sleeper whose deadline it reaches.
    public func advance(by seconds: Double) {
        advance(nanos: UInt64((seconds * 1e9).rounded()))
    }

    public func advance(nanos delta: UInt64) {
        condition.withLock {
            now += delta
            sleepers = sleepers.filter { $0.value > now }
            condition.broadcast()
        }
    }

    /// Threads asleep on the clock now.
    public var sleeping: Int { condition.withLock { sleepers.count } }

    /// The earliest deadline a thread sleeps until (nil: none asleep).
    public var nextDeadline: UInt64? { condition.withLock { sleepers.values.min() } }

    /// Waits until at least `count` threads are asleep on the clock: the
    /// threads a test drives have done what they do at this time. Bounded by
    /// `timeout` real seconds, in case one never sleeps (a test failure, not a
    /// pause): returns whether they did.
    @discardableResult
    public func waitForSleepers(_ count: Int = 1, timeout: Double = 20) -> Bool {
        let limit = Date(timeIntervalSinceNow: timeout)
        return condition.withLock {
            while sleepers.count < count {
                if !condition.wait(until: limit) { return sleepers.count >= count }
            }
            return true
        }
    }
}
