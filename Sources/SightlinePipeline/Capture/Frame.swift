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
    public let image: ImageBuffer
    public let groundTruth: [GroundTruthBox]
    /// The picture as the source encoded it, when it can be passed on.
    public let sourceUnit: SourceUnit?

    public init(seq: UInt64, capturedAt: Double, capturedNanos: UInt64, image: ImageBuffer,
                groundTruth: [GroundTruthBox] = [], sourceUnit: SourceUnit? = nil) {
        self.sourceUnit = sourceUnit
        self.seq = seq
        self.capturedAt = capturedAt
        self.capturedNanos = capturedNanos
        self.image = image
        self.groundTruth = groundTruth
    }
}
