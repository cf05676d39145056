import Foundation

/// A rectangle in an image's pixels: its top-left corner (`x`, `y`, y down)
/// and its width and height. `PixelRect<Int>` is a region of whole pixels
/// (a region of interest, a cascade's hit, a view into a buffer);
/// `PixelRect<Double>` is a face's box, which falls between pixels.
public struct PixelRect<Scalar: Numeric & Comparable & Sendable>: Sendable, Equatable {
    public var x: Scalar
    public var y: Scalar
    public var w: Scalar
    public var h: Scalar

    public init(x: Scalar, y: Scalar, w: Scalar, h: Scalar) {
        self.x = x; self.y = y; self.w = w; self.h = h
    }
}

extension PixelRect where Scalar == Double {
    public var centre: PixelPoint { PixelPoint(x: x + w / 2, y: y + h / 2) }

    /// The same region of whole pixels.
    public init(_ region: PixelRect<Int>) {
        self.init(x: Double(region.x), y: Double(region.y), w: Double(region.w), h: Double(region.h))
    }

    /// Whether the box lies within a `width` x `height` frame with `inset`
    /// times its own width to spare on every side; a negative inset lets it
    /// reach that far past the edges.
    public func isInside(width: Int, height: Int, inset: Double) -> Bool {
        let margin = w * inset
        return x >= margin && y >= margin && x + w <= Double(width) - margin && y + h <= Double(height) - margin
    }

    /// The area both share over the area either covers (0 when apart).
    public func intersectionOverUnion(_ other: PixelRect<Double>) -> Double {
        let ix = max(0, min(x + w, other.x + other.w) - max(x, other.x))
        let iy = max(0, min(y + h, other.y + other.h) - max(y, other.y))
        let intersection = ix * iy
        let union = w * h + other.w * other.h - intersection
        return union > 0 ? intersection / union : 0
    }
}

extension PixelRect where Scalar == Int {
    /// Whether `point` lies inside (the right and bottom edges excluded).
    public func contains(_ point: PixelPoint) -> Bool {
        point.x >= Double(x) && point.y >= Double(y) && point.x < Double(x + w) && point.y < Double(y + h)
    }
}
