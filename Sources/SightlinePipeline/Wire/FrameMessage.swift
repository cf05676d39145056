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

    /// This message as JSON (`WireJSONWriter`: what `WireJSON.encoder()` would write).
    public func jsonData() throws -> Data {
        var json = WireJSONWriter()
        json.openObject()
        json.key("type"); json.string(type)
        json.key("seq"); json.integer(seq)
        json.key("capturedAt"); try json.number(capturedAt)
        json.key("width"); json.integer(width)
        json.key("height"); json.integer(height)
        if let jpegBytes { json.key("jpegBytes"); json.integer(jpegBytes) }
        if let video {
            json.key("video")
            json.openObject()
            json.key("format"); json.string(video.format)
            json.key("key"); json.bool(video.key)
            json.key("bytes"); json.integer(video.bytes)
            if let codec = video.codec { json.key("codec"); json.string(codec) }
            json.closeObject()
        }
        json.key("detections"); try json.detections(detections)
        if let boxesFrom { json.key("boxesFrom"); json.integer(boxesFrom) }
        if let groundTruth {
            json.key("groundTruth")
            json.openArray()
            for truth in groundTruth {
                json.openObject()
                json.key("label"); json.string(truth.label)
                json.key("box"); try json.box(truth.box)
                if let roll = truth.roll { json.key("roll"); try json.number(roll) }
                json.closeObject()
            }
            json.closeArray()
        }
        json.closeObject()
        return json.data
    }
}
