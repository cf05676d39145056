import SightlineVision
/// A frame size in pixels.
public struct V4L2Size: Sendable, Hashable, CustomStringConvertible {
    public var width: Int
    public var height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    public var description: String { "\(width)x\(height)" }
}

/// The answer of VIDIOC_ENUM_FRAMESIZES for one pixel format.
public enum V4L2FrameSizes: Sendable, Equatable {
    case discrete([V4L2Size])
    /// Any size from min to max in steps (continuous when the steps are 1).
    case stepwise(min: V4L2Size, max: V4L2Size, step: V4L2Size)

    /// The sizes worth trying for a request: all discrete ones, or the
    /// stepwise size nearest the request.
    func candidates(near wanted: V4L2Size) -> [V4L2Size] {
        switch self {
        case .discrete(let sizes):
            return sizes
        case .stepwise(let min, let max, let step):
            return [V4L2Size(width: Self.snap(wanted.width, min.width, max.width, step.width),
                             height: Self.snap(wanted.height, min.height, max.height, step.height))]
        }
    }

    private static func snap(_ value: Int, _ low: Int, _ high: Int, _ step: Int) -> Int {
        let clamped = Swift.min(Swift.max(value, low), high)
        guard step > 1 else { return clamped }
        return low + (clamped - low) / step * step
    }
}
