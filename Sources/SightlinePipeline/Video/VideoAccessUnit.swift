import Foundation
import SightlineSupport

/// What `/ws?video=h264` sends for one frame (DESIGN.md): the encoder's
/// access unit with the frame's boxes in an SEI just before its first
/// slice (after the SPS, PPS and any SEI the encoder wrote), and on
/// keyframes the WebCodecs codec string of its SPS.
public struct VideoAccessUnit: Sendable, Equatable {
    /// The `video` object of the frame's JSON text message.
    public struct Info: Codable, Sendable, Equatable {
        public var format = "h264"
        public var key: Bool
        public var bytes: Int
        /// On keyframes only.
        public var codec: String?
    }

    /// An access unit the encoder should never make.
    public struct Malformed: Error, CustomStringConvertible, Sendable {
        public let description: String
    }

    public let seq: UInt64
    /// Annex B, the Sightline SEI before the first slice.
    public let data: Data
    public let isKeyframe: Bool
    /// `avc1.PPCCLL` from the SPS, on keyframes.
    public let codec: String?

    /// Binds `boxes` to the encoded frame. Throws when the encoder's output
    /// has no slice, or is a keyframe without an SPS.
    public init(encoded: EncodedVideo, boxes: SEIBoxes.Payload) throws {
        try self.init(encoded: encoded, seq: boxes.seq, sei: SEIBoxes.nalUnit(for: boxes))
    }

    /// Binds a processed frame's boxes to its encoded pixels.
    public init(encoded: EncodedVideo, frame: ProcessedFrame) throws {
        try self.init(encoded: encoded, boxes: SEIBoxes.Payload(frame: frame))
    }

    init(encoded: EncodedVideo, seq: UInt64, sei: Data) throws {
        guard let data = AnnexB.inserting(sei, beforeFirstSliceOf: encoded.data) else {
            throw Malformed(description: "access unit of frame \(seq) has no slice")
        }
        var codec: String?
        if encoded.isKeyframe {
            guard let found = AnnexB.codecString(in: encoded.data) else {
                throw Malformed(description: "keyframe of frame \(seq) has no SPS")
            }
            codec = found
        }
        self.seq = seq
        self.data = data
        self.isKeyframe = encoded.isKeyframe
        self.codec = codec
    }

    public var info: Info { Info(key: isKeyframe, bytes: data.count, codec: codec) }
}
