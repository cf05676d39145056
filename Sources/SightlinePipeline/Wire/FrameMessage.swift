import Foundation
import SightlineVision

/// The JSON text message sent before each frame's JPEG on /ws.
public struct FrameMessage: Codable, Sendable {
    public struct Truth: Codable, Sendable, Equatable {
        public var label: String
        public var box: NormalizedBox
        /// A face's roll, degrees clockwise (the demo's face).
        public var roll: Double?
    }

    public var type = "frame"
    public var seq: UInt64
    public var capturedAt: Double
    public var width: Int
    public var height: Int
    /// The JPEG's length (JPEG streams); absent on H.264 streams, which have `video` instead.
    public var jpegBytes: Int?
    /// The access unit that follows (`/ws?video=h264`; DESIGN.md).
    public var video: VideoAccessUnit.Info?
    public var detections: [Detection]
    /// Only on a frame the pipeline did not analyse (passed on from the source:
    /// every access unit goes out): the seq of the frame its `detections` were
    /// found on, an earlier one (0 when none had been analysed yet, and then
    /// `detections` is empty). Absent: the detections are this frame's own.
    public var boxesFrom: UInt64?
    /// Only from sources that know the truth (the demo scene).
    public var groundTruth: [Truth]?

    public init(seq: UInt64, capturedAt: Double, width: Int, height: Int, jpegBytes: Int?,
                detections: [Detection], groundTruth: [Truth]? = nil) {
        self.seq = seq
        self.capturedAt = capturedAt
        self.width = width
        self.height = height
        self.jpegBytes = jpegBytes
        self.detections = detections
        self.groundTruth = groundTruth
    }

    /// Ground truth boxes from pixels to normalized, for a frame of this size.
    public static func truths(_ boxes: [GroundTruthBox], width: Int, height: Int) -> [Truth]? {
        guard !boxes.isEmpty else { return nil }
        return boxes.map {
            Truth(label: $0.label, box: NormalizedBox(pixelX: $0.x, pixelY: $0.y, width: $0.w, height: $0.h,
                                                      frameWidth: width, frameHeight: height).rounded,
                  roll: $0.roll.map { ($0 * 10).rounded() / 10 })
        }
    }

    public func jsonData() throws -> Data {
        try WireJSON.encoder().encode(self)
    }
}
