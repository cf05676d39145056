import CSightlineAV
import Foundation
import SightlineSupport
import SightlineVision

/// A picture as libavcodec decoded it (a reference to the decoder's YUV
/// buffer, no copy), converted to BGR by libswscale only when asked for
/// (`FramePicture`): at full size for what needs every pixel, straight to
/// the detection size for the pipeline.
///
/// `@unchecked Sendable`: the AVFrame is never written after the decoder
/// gave it (libswscale only reads it), so any thread may convert it; each
/// conversion takes a scaler of its own from `DecodedPicture.scalers`,
/// under that pool's lock.
public final class DecodedPicture: PictureConversion, @unchecked Sendable {
    private let frame: OpaquePointer
    public let width: Int
    public let height: Int

    /// The picture `reader` kept at its last read, or nil when it kept none.
    init?(keptBy reader: OpaquePointer) {
        guard let frame = sl_av_reader_ref_kept(reader) else { return nil }
        self.frame = frame
        width = Int(sl_av_frame_width(frame))
        height = Int(sl_av_frame_height(frame))
    }

    deinit { sl_av_frame_free(frame) }

    public func converted(width: Int, height: Int) throws -> ImageBuffer {
        let image = ImageBuffer(width: width, height: height, channels: 3, zeroed: false)
        let scaler = Self.scalers.take()
        defer { Self.scalers.give(scaler) }
        try AVError.check { sl_av_scaler_convert(scaler.handle, frame, image.bytes, Int32(image.stride),
                                                 Int32(width), Int32(height), $0) }
        return image
    }

    /// libswscale's contexts, one per conversion under way: the pipeline
    /// thread's detection-size copies and the full-size ones other threads
    /// ask for keep a context each, rather than remaking one per size change.
    static let scalers = ScalerPool()

    final class Scaler: @unchecked Sendable {
        // Used by one conversion at a time: taken from and given back to the pool under its lock.
        let handle: OpaquePointer
        init() { handle = sl_av_scaler_new() }
        deinit { sl_av_scaler_free(handle) }
    }

    final class ScalerPool: Sendable {
        private let idle = Locked<[Scaler]>([])
        /// At most this many are kept idle (threads that convert at once).
        private let keep = 4

        func take() -> Scaler { idle.withLock { $0.popLast() } ?? Scaler() }

        func give(_ scaler: Scaler) {
            idle.withLock { if $0.count < keep { $0.append(scaler) } }
        }
    }
}
