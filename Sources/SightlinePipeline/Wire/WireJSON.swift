import Foundation

/// The JSONEncoder settings the wire's per-frame JSON (`FrameMessage`,
/// `SEIBoxes.Payload`) was encoded with before `WireJSONWriter` wrote it by
/// hand; the tests hold the writer to what this encoder writes.
public enum WireJSON {
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return encoder
    }
}
