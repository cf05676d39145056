import Foundation
import SightlineVision

/// What the pipeline makes of one frame, handed to every sink: the frame's
/// identity and size, its JPEGs (`FrameJPEG`: made when someone takes JPEG,
/// once per size, shared by every sink), its
/// pixels (for sinks that encode them again, H.264), the detections in wire
/// form, the source's ground truth when it has one, and how long each stage
/// took on it. Immutable, so sinks on other threads share it freely.
public struct ProcessedFrame: Sendable {
    public let seq: UInt64
    /// Wall-clock capture time, Unix seconds.
    public let capturedAt: Double
    /// Monotonic capture time in nanoseconds (for ages and latencies).
    public let capturedNanos: UInt64
    public let width: Int
    public let height: Int
    /// The frame's JPEGs: those made for the viewers when the pipeline handed
    /// it on, any other made when first asked for.
    public let jpeg: FrameJPEG
    /// The frame's BGR pixels, read-only from here on: every source makes a
    /// new buffer for every frame and no stage writes into it, so a sink on
    /// another thread may read it for as long as it holds the frame. Nil
    /// where a frame was made without them (tests). A camera's passed-on
    /// frames make them only when this is first read (`FramePicture`).
    public var image: ImageBuffer? { picture?.image }
    public let picture: FramePicture?
    public let detections: [Detection]
    /// In pixels, as the source reported it (the demo scene knows it).
    public let groundTruth: [GroundTruthBox]
    /// Seconds each named stage took on this frame.
    public let stageSeconds: [StageName: Double]
    /// The picture as the source encoded it, when it can be passed on.
    public let sourceUnit: SourceUnit?

    public init(seq: UInt64, capturedAt: Double, capturedNanos: UInt64, width: Int, height: Int, jpeg: FrameJPEG,
                image: ImageBuffer? = nil, detections: [Detection], groundTruth: [GroundTruthBox] = [],
                stageSeconds: [StageName: Double] = [:], sourceUnit: SourceUnit? = nil) {
        self.init(seq: seq, capturedAt: capturedAt, capturedNanos: capturedNanos, width: width, height: height,
                  jpeg: jpeg, picture: image.map(FramePicture.init), detections: detections, groundTruth: groundTruth,
                  stageSeconds: stageSeconds, sourceUnit: sourceUnit)
    }

    public init(seq: UInt64, capturedAt: Double, capturedNanos: UInt64, width: Int, height: Int, jpeg: FrameJPEG,
                picture: FramePicture?, detections: [Detection], groundTruth: [GroundTruthBox] = [],
                stageSeconds: [StageName: Double] = [:], sourceUnit: SourceUnit? = nil) {
        self.sourceUnit = sourceUnit
        self.seq = seq
        self.capturedAt = capturedAt
        self.capturedNanos = capturedNanos
        self.width = width
        self.height = height
        self.jpeg = jpeg
        self.picture = picture
        self.detections = detections
        self.groundTruth = groundTruth
        self.stageSeconds = stageSeconds
    }

    /// A frame whose JPEG is given, every size's (tests).
    public init(seq: UInt64, capturedAt: Double, capturedNanos: UInt64, width: Int, height: Int, jpeg: Data,
                image: ImageBuffer? = nil, detections: [Detection], groundTruth: [GroundTruthBox] = [],
                stageSeconds: [StageName: Double] = [:], sourceUnit: SourceUnit? = nil) {
        self.init(seq: seq, capturedAt: capturedAt, capturedNanos: capturedNanos, width: width, height: height,
                  jpeg: FrameJPEG(encoded: jpeg), image: image, detections: detections, groundTruth: groundTruth,
                  stageSeconds: stageSeconds, sourceUnit: sourceUnit)
    }

    /// The `/ws` text message for this frame (see DESIGN.md), without
    /// `jpegBytes`: the stream sink adds each JPEG's own length.
    public var message: FrameMessage {
        FrameMessage(seq: seq, capturedAt: capturedAt, width: width, height: height, jpegBytes: nil,
                     detections: detections,
                     groundTruth: FrameMessage.truths(groundTruth, width: width, height: height))
    }
}
