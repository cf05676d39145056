import Foundation

/// The real clock's static API, for code that does not take a clock (measuring
/// how long something took, logging). A component whose behaviour in time is
/// tested takes a `SightlineClock` from its owner instead (default: `RealClock`).
public enum MonotonicClock {
    /// Monotonic time in nanoseconds (CLOCK_MONOTONIC).
    public static func nanos() -> UInt64 { RealClock().nanos() }

    public static func wallSeconds() -> Double { RealClock().wallSeconds() }

    /// Whether the monotonic time `nanos` (0: never) lies within the last `seconds`.
    public static func happened(_ nanos: UInt64, within seconds: Double) -> Bool {
        RealClock().happened(nanos, within: seconds)
    }

    /// Sleeps until the monotonic deadline (returns at once if it has passed).
    public static func sleep(until deadline: UInt64) { RealClock().sleep(until: deadline) }
}
