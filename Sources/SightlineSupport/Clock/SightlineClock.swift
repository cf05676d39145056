import Foundation

/// The time a component reads and sleeps by, taken from its owner as a value:
/// the real clock (`RealClock`, the default everywhere) in the server, a
/// `ManualClock` (SightlineTesting) in unit tests, whose time moves only when the test advances it.
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
