import CSightlineAV
import Foundation
import SightlineVision

/// Decodes H.264 access units (Annex B) to BGR with libavcodec's decoder:
/// for the benchmark's quality figures and for tests; the browser decodes
/// the stream itself.
///
/// Ownership: not thread-safe; a decoder belongs to one thread.
public final class H264Decoder {
    private let handle: OpaquePointer

    public init() throws {
        handle = try AVError.check { sl_av_decoder_open($0) }
    }

    deinit { sl_av_decoder_close(handle) }

    /// The picture of one access unit, or nil while the decoder waits for
    /// more (before the first keyframe, for example).
    public func decode(_ accessUnit: Data) throws -> ImageBuffer? {
        // An empty packet would tell libavcodec to drain, not decode.
        guard !accessUnit.isEmpty else { throw AVError(message: "empty access unit") }
        var got: Int32 = 0
        var picture = sl_av_picture()
        _ = try accessUnit.withUnsafeBytes { raw in
            try AVError.check { error in
                sl_av_decoder_decode(handle, raw.bindMemory(to: UInt8.self).baseAddress, raw.count, &got, &picture, error)
            }
        }
        guard got != 0, picture.data != nil else { return nil }
        return ImageBuffer(copying: picture)
    }
}
