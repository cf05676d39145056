import SightlineVision
/// A V4L2 fraction; as a frame interval, seconds per frame.
public struct V4L2Fraction: Sendable, Hashable, CustomStringConvertible {
    public var numerator: UInt32
    public var denominator: UInt32

    public init(numerator: UInt32, denominator: UInt32) {
        self.numerator = numerator
        self.denominator = denominator
    }

    /// The interval for a frame rate: 1/30 for 30 fps, 1000/29970 for 29.97.
    public init(fps: Double) {
        let rounded = fps.rounded()
        if abs(fps - rounded) < 0.001, rounded >= 1, rounded < Double(UInt32.max) {
            self.init(numerator: 1, denominator: UInt32(rounded))
        } else {
            self.init(numerator: 1000, denominator: UInt32(max(1, min(fps * 1000, 1e9)).rounded()))
        }
    }

    /// Frames per second when this is a frame interval; nil when it is not a usable one.
    public var fps: Double? {
        guard numerator > 0, denominator > 0 else { return nil }
        return Double(denominator) / Double(numerator)
    }

    public var description: String { "\(numerator)/\(denominator)" }
}

/// The answer of VIDIOC_ENUM_FRAMEINTERVALS for one format and size.
public enum V4L2FrameIntervals: Sendable, Equatable {
    case discrete([V4L2Fraction])
    /// Any interval from min (fastest) to max (slowest).
    case stepwise(min: V4L2Fraction, max: V4L2Fraction)

    /// The highest frame rate on offer.
    public var maxFPS: Double {
        switch self {
        case .discrete(let intervals): return intervals.compactMap(\.fps).max() ?? 0
        case .stepwise(let fastest, _): return fastest.fps ?? 0
        }
    }
}
