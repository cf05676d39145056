import Foundation
import SightlineSupport

/// Where a frame's BGR pixels come from when they are made only on demand:
/// a decoded picture still in the decoder's own format (YUV), which can be
/// converted at its own size or straight to a smaller one.
public protocol PictureConversion: Sendable {
    var width: Int { get }
    var height: Int { get }
    /// The picture in BGR at `width` x `height` (its own size, or smaller).
    func converted(width: Int, height: Int) throws -> ImageBuffer
}

/// A frame's picture: its size at once, its full-size BGR pixels when first
/// asked for.
///
/// Why: a camera's H.264 or MJPEG is passed on as it is, so at 1080p or 4K
/// most frames are never needed at full size in BGR. The pipeline analyses
/// a copy at the detection size, made straight from the decoded YUV in one
/// scaling pass, or from the JPEG at an IDCT scale (`scaled`); the full
/// picture is converted only for what asks for it (a JPEG viewer, a
/// snapshot, a face pass that reads the full frame, an encoder), once, and
/// then shared. A picture a source made in BGR anyway (the demo, V4L2's
/// YUYV) is simply held (`init(_:)`).
///
/// Threads: the full picture is made under `full`'s lock by whichever thread
/// asks first; the others wait for it and then share it read-only (see
/// `ImageBuffer`'s ownership).
public final class FramePicture: Sendable {
    public let width: Int
    public let height: Int
    private let conversion: (any PictureConversion)?
    private let full: Locked<ImageBuffer?>

    /// A picture whose pixels are already in BGR.
    public init(_ image: ImageBuffer) {
        width = image.width
        height = image.height
        conversion = nil
        full = Locked(image)
    }

    /// A picture converted from `conversion` when it is first asked for.
    public init(converting conversion: any PictureConversion) {
        width = conversion.width
        height = conversion.height
        self.conversion = conversion
        full = Locked(nil)
    }

    /// Whether the full-size BGR pixels have been made (or were given).
    public var isConverted: Bool { full.withLock { $0 != nil } }

    /// The full-size BGR picture, converted on this thread if nobody has yet.
    /// A conversion that fails (it cannot where the first frame of the
    /// source converted: same format, same size) gives a black picture of
    /// the size rather than no frame.
    public var image: ImageBuffer {
        full.withLock { stored in
            if let stored { return stored }
            let made: ImageBuffer
            if let conversion, let converted = try? conversion.converted(width: width, height: height) {
                made = converted
            } else {
                made = ImageBuffer(width: width, height: height)
            }
            stored = made
            return made
        }
    }

    /// The picture at `width` x `height` (smaller than its own size): straight
    /// from the decoded picture while it has not been converted at full size,
    /// else scaled down from the BGR pixels (`ImageOps.scaledDown`).
    public func scaled(width: Int, height: Int) throws -> ImageBuffer {
        try scaledFromSource(width: width, height: height)
            ?? ImageOps.scaledDown(image, width: width, height: height)
    }

    /// The picture at `width` x `height` (smaller than its own size) made
    /// straight from the decoded picture when it has not been converted at
    /// full size; nil when it has been (or was given in BGR): then scale
    /// that image instead.
    public func scaledFromSource(width: Int, height: Int) throws -> ImageBuffer? {
        guard let conversion, !isConverted else { return nil }
        return try conversion.converted(width: width, height: height)
    }
}
