import Foundation
import SightlineVision

/// A numbered frame on its way through the pipeline.
public struct Frame: Sendable {
    /// Capture sequence number, strictly increasing for the server's lifetime.
    public let seq: UInt64
    /// Wall-clock capture time, Unix seconds (what clients see as capturedAt).
    public let capturedAt: Double
    /// Monotonic capture time in nanoseconds (for ages and budgets).
    public let capturedNanos: UInt64
    /// The picture: its size at once, its full-size BGR pixels when first
    /// asked for (`image`; a camera's passed-on frames are mostly never needed so).
    public let picture: FramePicture
    public var image: ImageBuffer { picture.image }
    public var width: Int { picture.width }
    public var height: Int { picture.height }
    public let groundTruth: [GroundTruthBox]
    /// The picture as the source encoded it, when it can be passed on.
    public let sourceUnit: SourceUnit?

    public init(seq: UInt64, capturedAt: Double, capturedNanos: UInt64, image: ImageBuffer,
                groundTruth: [GroundTruthBox] = [], sourceUnit: SourceUnit? = nil) {
        self.init(seq: seq, capturedAt: capturedAt, capturedNanos: capturedNanos, picture: FramePicture(image),
                  groundTruth: groundTruth, sourceUnit: sourceUnit)
    }

    public init(seq: UInt64, capturedAt: Double, capturedNanos: UInt64, picture: FramePicture,
                groundTruth: [GroundTruthBox] = [], sourceUnit: SourceUnit? = nil) {
        self.sourceUnit = sourceUnit
        self.seq = seq
        self.capturedAt = capturedAt
        self.capturedNanos = capturedNanos
        self.picture = picture
        self.groundTruth = groundTruth
    }
}
