import Foundation

/// The size the pipeline analyses a frame at: a frame whose longer side is
/// above `longSide` is analysed on a copy scaled down to it (proportions
/// kept), a frame at or below it as it is.
///
/// Why 640 by default: no frame-wide face pass reads more than 640 pixels on
/// the long side (YuNet's usual pass letterboxes the frame to 320, its fine
/// pass to `YuNetDetector.Options.fineInputSize`, 640), so a 640 copy of a
/// 1080p or 4K frame loses no face those passes would find on the full
/// frame, while a 320 copy would lose the fine pass's small faces (below
/// about 40 pixels at 640, 120 at 1080p). Template matching searches
/// levels of 0.175 and 0.7 of the analysed picture: at 640 the same levels
/// as on a 640x480 camera, where its figures were set.
public struct AnalysisSize: Sendable, Equatable {
    public static let defaultLongSide = 640

    /// The longest side analysed (pixels); 0 analyses every frame at its own size.
    public var longSide: Int

    public init(longSide: Int = AnalysisSize.defaultLongSide) { self.longSide = longSide }

    /// The copy's size for a frame of this size; nil when the frame is analysed as it is.
    public func scaled(width: Int, height: Int) -> (width: Int, height: Int)? {
        guard longSide > 0, max(width, height) > longSide else { return nil }
        let factor = Double(longSide) / Double(max(width, height))
        let w = width >= height ? longSide : max(1, Int((Double(width) * factor).rounded()))
        let h = height > width ? longSide : max(1, Int((Double(height) * factor).rounded()))
        return (w, h)
    }

    /// The picture to analyse: `image` itself when it is at or below the size,
    /// else its copy at the size, made cheaply without aliasing
    /// (`ImageOps.scaledDown`). A picture whose BGR pixels are still to be made (`FramePicture`) is
    /// converted straight to the size from its decoded form, in one
    /// libswscale pass (area filter): at 1080p 1.2 ms where converting it
    /// whole and then scaling took 0.9 + 0.9, at 4K 2.2 ms where it took 3.1 + 4.
    public func analysed(_ picture: FramePicture) throws -> ImageBuffer {
        guard let size = scaled(width: picture.width, height: picture.height) else { return picture.image }
        return try picture.scaled(width: size.width, height: size.height)
    }

    public func analysed(_ image: ImageBuffer) throws -> ImageBuffer {
        guard let size = scaled(width: image.width, height: image.height) else { return image }
        return try ImageOps.scaledDown(image, width: size.width, height: size.height)
    }
}
