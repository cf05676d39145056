import Foundation

/// A frame that is still the JPEG an MJPEG source sent, decoded by
/// TurboJPEG only when and at the size it is asked for (`FramePicture`).
///
/// Why: an MJPEG file or stream's JPEGs go to viewers as they are, so its
/// pictures are needed only by the analysis, and at the detection size.
/// TurboJPEG decodes straight to BGR (no YUV picture and libswscale pass
/// between) and, for a detection size at most 7/8 of the picture, lets the
/// IDCT make a smaller picture that is then scaled the rest of the way.
/// On the 640x480 MJPEG pan a frame took 0.92 ms this way against 1.25 ms
/// through libavcodec and libswscale.
///
/// Immutable (the JPEG's bytes and its size), so any thread may convert it;
/// each conversion makes its own TurboJPEG handle.
public final class JPEGPicture: PictureConversion {
    public let jpeg: Data
    public let width: Int
    public let height: Int

    /// The largest side a frame's JPEG may claim (8K is 7680): a stream's
    /// JPEG whose header claims more is refused before anything is
    /// allocated for it, as libavcodec refuses pictures past its limit.
    public static let maximumSide = 8192

    /// `jpeg` after reading its header with `decoder` (any, on this thread):
    /// throws when it has none TurboJPEG can read, or claims a side past `maximumSide`.
    public init(jpeg: Data, headerBy decoder: JPEGDecoder) throws {
        let size = try decoder.size(of: jpeg)
        guard size.width > 0, size.height > 0 else { throw JPEGError(message: "empty image") }
        guard size.width <= Self.maximumSide, size.height <= Self.maximumSide else {
            throw JPEGError(message: "a \(size.width)x\(size.height) JPEG; at most \(Self.maximumSide) a side")
        }
        self.jpeg = jpeg
        width = size.width
        height = size.height
    }

    public func converted(width: Int, height: Int) throws -> ImageBuffer {
        let decoder = try JPEGDecoder()
        if width == self.width, height == self.height { return try decoder.decode(jpeg) }
        let decoded = try decoder.decode(jpeg, atLeastWidth: width, height: height)
        return try ImageOps.scaledDown(decoded, width: width, height: height)
    }
}
