import CSightlineV4L2
import SightlineSupport

/// A V4L2 pixel format code (four ASCII characters packed little-endian).
public struct V4L2FourCC: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32

    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Packs four ASCII characters, as the v4l2_fourcc macro does.
    public init(_ code: StaticString) {
        precondition(code.utf8CodeUnitCount == 4, "a fourcc has four characters")
        let bytes = UnsafeBufferPointer(start: code.utf8Start, count: 4)
        rawValue = bytes.enumerated().reduce(0) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
    }

    public static let yuyv = V4L2FourCC(rawValue: SL_V4L2_PIX_FMT_YUYV)
    public static let mjpeg = V4L2FourCC(rawValue: SL_V4L2_PIX_FMT_MJPEG)
    public static let jpeg = V4L2FourCC(rawValue: SL_V4L2_PIX_FMT_JPEG)
    public static let bgr24 = V4L2FourCC(rawValue: SL_V4L2_PIX_FMT_BGR24)

    /// The four characters, for logs and SourceFormat.pixelFormat ("YUYV", "MJPG").
    public var description: String {
        let bytes = (0..<4).map { UInt8(truncatingIfNeeded: rawValue >> (8 * $0)) }
        return String(decoding: bytes, as: UTF8.self).trimmingSuffix(" ")
    }
}

private extension String {
    func trimmingSuffix(_ character: Character) -> String {
        var result = self
        while result.last == character { result.removeLast() }
        return result
    }
}
