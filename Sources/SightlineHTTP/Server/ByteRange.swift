import Foundation
import SightlineSupport

/// One `Range: bytes=...` request header against a body of `size` bytes
/// (RFC 9110 §14): `bytes=0-99`, `bytes=500-`, `bytes=-500`.
///
/// A header this server does not serve as a range (another unit, several
/// ranges, bad syntax) is ignored, as RFC 9110 allows: the whole body is
/// sent with 200. A range that starts at or past the end is unsatisfiable
/// (416 with `Content-Range: bytes */size`). Pure; any thread.
public enum ByteRange: Equatable, Sendable {
    /// Send the whole body (no header, or one to ignore).
    case whole
    /// Send these bytes with 206.
    case partial(ClosedRange<Int>)
    /// 416.
    case unsatisfiable

    public static func parse(_ header: String?, size: Int) -> ByteRange {
        guard let header else { return .whole }
        let text = header.trimmingCharacters(in: .whitespaces)
        guard text.lowercased().hasPrefix("bytes=") else { return .whole }
        let spec = text.dropFirst(6).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .whole }
        let first = spec[..<dash].trimmingCharacters(in: .whitespaces)
        let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        func number(_ s: String) -> Int? {
            guard !s.isEmpty, s.count <= 18, s.allSatisfy(\.isASCIIDigitCharacter) else { return nil }
            return Int(s)
        }
        if first.isEmpty {
            // The last N bytes.
            guard let count = number(last) else { return .whole }
            guard count > 0, size > 0 else { return .unsatisfiable }
            return .partial(max(0, size - count)...(size - 1))
        }
        guard let start = number(first) else { return .whole }
        var end = size - 1
        if !last.isEmpty {
            guard let given = number(last), given >= start else { return .whole }
            end = min(given, size - 1)
        }
        guard start < size else { return .unsatisfiable }
        return .partial(start...end)
    }
}
