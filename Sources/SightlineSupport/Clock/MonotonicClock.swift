import Foundation

/// Monotonic time in nanoseconds (CLOCK_MONOTONIC).
public enum MonotonicClock {
    public static func nanos() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    public static func wallSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Whether the monotonic time `nanos` (0: never) lies within the last `seconds`.
    public static func happened(_ nanos: UInt64, within seconds: Double) -> Bool {
        nanos > 0 && Double(Self.nanos() &- nanos) / 1e9 < seconds
    }

    /// Sleeps until the monotonic deadline (returns at once if it has passed).
    public static func sleep(until deadline: UInt64) {
        let now = nanos()
        guard deadline > now else { return }
        let delta = deadline - now
        var request = timespec(tv_sec: Int(delta / 1_000_000_000), tv_nsec: Int(delta % 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}
