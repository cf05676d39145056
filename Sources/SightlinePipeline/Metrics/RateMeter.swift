import Foundation
import SightlineSupport

/// Events per second over a sliding window of the last `window` seconds.
/// Not thread-safe: owned by `PipelineStats` under its lock.
public struct RateMeter: Sendable {
    public let window: Double
    private var stamps: [UInt64] = []
    private var head = 0

    public init(window: Double = 2.0) { self.window = window }

    public mutating func tick(at nanos: UInt64 = MonotonicClock.nanos()) {
        stamps.append(nanos)
        trim(now: nanos)
    }

    public mutating func rate(now: UInt64 = MonotonicClock.nanos()) -> Double {
        trim(now: now)
        let live = stamps.count - head
        guard live >= 2 else { return 0 }
        // Events over the span they cover, so a fresh meter is not under-read.
        let span = max(Double(now - stamps[head]) / 1e9, window * 0.25)
        return Double(live - 1) / min(span, window)
    }

    private mutating func trim(now: UInt64) {
        let horizon = now > UInt64(window * 1e9) ? now - UInt64(window * 1e9) : 0
        while head < stamps.count && stamps[head] < horizon { head += 1 }
        if head > 256 && head * 2 > stamps.count {
            stamps.removeFirst(head)
            head = 0
        }
    }
}
