import Foundation
import SightlineVision

/// Makes an event's crop: decodes the best frame's JPEG once (TurboJPEG),
/// cuts the event's box out of it (clamped to the frame: a face cut by the
/// edge keeps what is inside) and encodes that.
///
/// Ownership: one per thread (the recorder's); the decoder and encoder are not thread-safe.
final class EventCropper {
    private let decoder: JPEGDecoder
    private let encoder: JPEGEncoder
    /// Crops smaller than this on a side are not made.
    static let minimumSide = 4

    init(quality: Int = 85) throws {
        decoder = try JPEGDecoder()
        encoder = try JPEGEncoder(quality: quality)
    }

    /// The JPEG of `box` in `jpeg`; nil when the box lies (almost) outside the frame.
    func crop(_ jpeg: Data, box: NormalizedBox) throws -> Data? {
        let image = try decoder.decode(jpeg)
        guard let rect = Self.pixelRect(box, width: image.width, height: image.height) else { return nil }
        return try encoder.encode(image.cropped(x: rect.x, y: rect.y, width: rect.width, height: rect.height))
    }

    /// The box in whole pixels, clamped to the frame.
    static func pixelRect(_ box: NormalizedBox, width: Int, height: Int) -> (x: Int, y: Int, width: Int, height: Int)? {
        guard box.x.isFinite, box.y.isFinite, box.w.isFinite, box.h.isFinite else { return nil }
        let x0 = max(0, min(width, Int((box.x * Double(width)).rounded(.down))))
        let y0 = max(0, min(height, Int((box.y * Double(height)).rounded(.down))))
        let x1 = max(0, min(width, Int(((box.x + box.w) * Double(width)).rounded(.up))))
        let y1 = max(0, min(height, Int(((box.y + box.h) * Double(height)).rounded(.up))))
        guard x1 - x0 >= minimumSide, y1 - y0 >= minimumSide else { return nil }
        return (x0, y0, x1 - x0, y1 - y0)
    }
}
