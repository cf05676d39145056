import Foundation

/// A frame as its source encoded it, carried beside the decoded pixels so
/// that consumers of that encoding get it untouched (DESIGN.md, "The
/// source's own encoding"): an H.264 access unit for the H.264 viewers,
/// clips, recordings and relays, or an MJPEG source's JPEG for the JPEG
/// viewers, `/stream.mjpg` and snapshots. Immutable and shared.
public struct SourceUnit: Sendable, Equatable {
    public enum Codec: String, Sendable, Equatable {
        case h264, mjpeg
    }

    public let codec: Codec
    /// H.264: one access unit, Annex B, SPS and PPS before an IDR's slices.
    /// MJPEG: one whole JPEG (its Huffman tables included).
    public let data: Data
    /// H.264: an IDR (a decoder can start here). MJPEG: always.
    public let isKeyframe: Bool

    public init(codec: Codec, data: Data, isKeyframe: Bool) {
        self.codec = codec
        self.data = data
        self.isKeyframe = isKeyframe
    }
}
