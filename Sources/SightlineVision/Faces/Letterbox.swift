import CSightlineOpenCV
import Foundation
import SightlineSupport

/// How a region of a frame is fitted, aspect ratio kept, into the top-left of
/// a network input whose longer side is `inputSize` and whose shorter side
/// is the region's, scaled, rounded up to a multiple of 32 (the rest black),
/// and how to map back. A 640x480 frame goes into 320x256, not 320x320: the
/// network is fully convolutional, and the padding a square would add costs
/// a fifth of the pass for nothing.
struct Letterbox: Equatable {
    var regionX: Int, regionY: Int, regionWidth: Int, regionHeight: Int
    var inputSize: Int

    var inputWidth: Int { Self.roundedUp(scaledWidth) }
    var inputHeight: Int { Self.roundedUp(scaledHeight) }

    private static func roundedUp(_ side: Int) -> Int { (side + 31) / 32 * 32 }

    /// Input pixels per frame pixel.
    var scale: Double { Double(inputSize) / Double(max(regionWidth, regionHeight)) }
    var scaledWidth: Int { max(1, min(inputSize, Int((Double(regionWidth) * scale).rounded()))) }
    var scaledHeight: Int { max(1, min(inputSize, Int((Double(regionHeight) * scale).rounded()))) }

    /// Input pixels back to frame pixels.
    var toFrame: AffineTransform {
        AffineTransform(a: 1 / scale, b: 0, c: Double(regionX), d: 0, e: 1 / scale, f: Double(regionY))
    }

    /// Fills `input` (inputWidth x inputHeight, BGR): black, then the region resized into its top-left.
    func fill(_ input: ImageBuffer, from frame: ImageBuffer) throws {
        precondition(input.width == inputWidth && input.height == inputHeight)
        input.bytes.update(repeating: 0, count: input.byteCount)
        let source = frame.cView(x: regionX, y: regionY, width: regionWidth, height: regionHeight)
        let target = input.cView(x: 0, y: 0, width: scaledWidth, height: scaledHeight)
        try ImageOps.shrink(source, into: target)
    }
}

/// A region of interest as a normalized rectangle, clipped to a frame in pixels.
extension NormalizedBox {
    /// The pixel rectangle inside a width x height frame; nil when empty.
    func pixelRegion(width: Int, height: Int) -> PixelRect<Int>? {
        let x0 = Int((max(0, min(1, x)) * Double(width)).rounded())
        let y0 = Int((max(0, min(1, y)) * Double(height)).rounded())
        let x1 = Int((max(0, min(1, x + w)) * Double(width)).rounded())
        let y1 = Int((max(0, min(1, y + h)) * Double(height)).rounded())
        guard x1 > x0, y1 > y0 else { return nil }
        return PixelRect(x: x0, y: y0, w: x1 - x0, h: y1 - y0)
    }
}
