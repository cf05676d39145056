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
        let size = Scaler.Sizes(fromWidth: self.width, fromHeight: self.height, toWidth: width, toHeight: height)
        let scaler = Self.scalers.take(for: size)
        defer { Self.scalers.give(scaler, for: size) }
        try AVError.check { sl_av_scaler_convert(scaler.handle, frame, image.bytes, Int32(image.stride),
                                                 Int32(width), Int32(height), $0) }
        return image
    }

    /// libswscale's contexts, one per conversion under way, each handed
    /// back to the conversion of the same sizes: the pipeline thread's
    /// detection-size copies, the face thread's and the JPEGs' each keep a
    /// context of their own rather than remaking one (its filters: about a
    /// millisecond at 4K) whenever another size was converted between.
    static let scalers = ScalerPool()

    final class Scaler: @unchecked Sendable {
        /// What a scaler last converted: its context is made for these.
        struct Sizes: Equatable { var fromWidth, fromHeight, toWidth, toHeight: Int }
        // Used by one conversion at a time: taken from and given back to the pool under its lock.
        let handle: OpaquePointer
        init() { handle = sl_av_scaler_new() }
        deinit { sl_av_scaler_free(handle) }
    }

    final class ScalerPool: Sendable {
        private let idle = Locked<[(sizes: Scaler.Sizes, scaler: Scaler)]>([])
        /// At most this many are kept idle (the sizes converted at once).
        private let keep = 6

        /// An idle scaler that last converted `sizes`, else the least recently used one, else a new one.
        func take(for sizes: Scaler.Sizes) -> Scaler {
            idle.withLock { idle in
                if let index = idle.lastIndex(where: { $0.sizes == sizes }) { return idle.remove(at: index).scaler }
                return idle.isEmpty ? nil : idle.removeFirst().scaler
            } ?? Scaler()
        }

        func give(_ scaler: Scaler, for sizes: Scaler.Sizes) {
            idle.withLock { idle in
                idle.append((sizes, scaler))
                if idle.count > keep { idle.removeFirst() }
            }
        }
    }
}
