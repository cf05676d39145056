import Foundation
import SightlineVision

/// A fixed-bucket histogram of durations, cheap to record into.
///
/// Buckets are logarithmic (about 4 % apart) from 10 µs to about 10 s,
/// so a percentile is read to within one bucket. Not thread-safe: owned by
/// `PipelineStats`, which guards it with its lock.
public struct LatencyHistogram: Sendable {
    /// Upper bounds of the buckets, in seconds.
    static let bounds: [Double] = {
        var bounds: [Double] = []
        var value = 10e-6
        while value < 10 { bounds.append(value); value *= 1.04 }
        return bounds
    }()

    /// Bucket upper bounds reported in Prometheus text (seconds).
    public static let prometheusBounds: [Double] =
        [0.001, 0.002, 0.005, 0.01, 0.015, 0.02, 0.025, 0.033, 0.05, 0.075, 0.1, 0.25, 0.5, 1]

    private var counts = [UInt64](repeating: 0, count: LatencyHistogram.bounds.count + 1)
    public private(set) var count: UInt64 = 0
    public private(set) var sum: Double = 0

    public init() {}

    public mutating func record(seconds: Double) {
        var low = 0, high = Self.bounds.count
        while low < high {
            let mid = (low + high) / 2
            if Self.bounds[mid] < seconds { low = mid + 1 } else { high = mid }
        }
        counts[low] += 1
        count += 1
        sum += seconds
    }

    /// The q-th quantile (0...1) in seconds, or nil when empty.
    public func quantile(_ q: Double) -> Double? {
        guard count > 0 else { return nil }
        let rank = UInt64((Double(count) * q).rounded(.up))
        var seen: UInt64 = 0
        for (index, n) in counts.enumerated() {
            seen += n
            if seen >= max(rank, 1) {
                return index < Self.bounds.count ? Self.bounds[index] : Self.bounds.last!
            }
        }
        return Self.bounds.last
    }

    /// How many samples are at or under `bound` seconds (for Prometheus buckets).
    public func count(atOrBelow bound: Double) -> UInt64 {
        var total: UInt64 = 0
        for (index, n) in counts.enumerated() {
            let upper = index < Self.bounds.count ? Self.bounds[index] : .infinity
            if upper <= bound * 1.0000001 { total += n } else { break }
        }
        return total
    }
}
