import Foundation
import SightlineSupport
import SightlineVision

/// A latency histogram's median and 99th percentile in milliseconds (to the
/// microsecond), and how many samples it holds: how `/api/state`, `bench` and
/// the video stats show a histogram.
public struct Percentiles: Codable, Sendable {
    public var p50: Double?
    public var p99: Double?
    public var count: UInt64

    public init(p50: Double?, p99: Double?, count: UInt64) {
        self.p50 = p50
        self.p99 = p99
        self.count = count
    }

    public init(_ histogram: LatencyHistogram) {
        self.init(p50: histogram.quantile(0.5).map { ($0 * 1000).rounded(toPlaces: 3) },
                  p99: histogram.quantile(0.99).map { ($0 * 1000).rounded(toPlaces: 3) },
                  count: histogram.count)
    }
}
