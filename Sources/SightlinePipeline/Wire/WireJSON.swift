import Foundation

/// How every wire JSON document is encoded (the `/ws` frame message, the
/// boxes in the H.264 SEI), so the same detections come out as the same
/// bytes wherever they travel.
public enum WireJSON {
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return encoder
    }
}
