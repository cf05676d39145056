import Foundation

/// The time a component reads and sleeps by, taken from its owner as a value:
/// the real clock (`RealClock`, the default everywhere) in the server, a
/// `ManualClock` in unit tests, whose time moves only when the test advances it.
public protocol SightlineClock: Sendable {
    /// Monotonic time in nanoseconds.
    func nanos() -> UInt64
    /// Wall-clock time in seconds since 1970.
    func wallSeconds() -> Double
    /// Sleeps until the monotonic `deadline` (returns at once if it has passed).
    /// May return sooner when `wakeSleepers()` is called: a loop that sleeps
    /// and can be stopped checks the time (and its stop flag) again.
    func sleep(until deadline: UInt64)
    /// Ends the sleeps under way early where the clock can (the manual clock:
    /// a component being stopped or switched wakes its thread). The real clock's
    /// sleeps are short steps; it does nothing.
    func wakeSleepers()
}

extension SightlineClock {
    /// Whether the monotonic time `nanos` (0: never) lies within the last `seconds`.
    public func happened(_ nanos: UInt64, within seconds: Double) -> Bool {
        nanos > 0 && Double(self.nanos() &- nanos) / 1e9 < seconds
    }

    /// Seconds from the monotonic time `start` to now.
    public func seconds(since start: UInt64) -> Double {
        Double(nanos() &- start) / 1e9
    }
}

/// CLOCK_MONOTONIC and CLOCK_REALTIME, and `nanosleep`.
public struct RealClock: SightlineClock {
    public init() {}

    public func nanos() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    public func wallSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    public func sleep(until deadline: UInt64) {
        let now = nanos()
        guard deadline > now else { return }
        let delta = deadline - now
        var request = timespec(tv_sec: Int(delta / 1_000_000_000), tv_nsec: Int(delta % 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }

    public func wakeSleepers() {}
}

extension SightlineClock where Self == RealClock {
    /// The real clock (the default of every component that takes a clock).
    public static var real: RealClock { RealClock() }
}

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
