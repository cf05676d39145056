import CSightlineAV
import SightlineVision

/// An error that came back from the FFmpeg shim (CSightlineAV: libavcodec,
/// libavformat, libswscale).
public struct AVError: Error, CustomStringConvertible, Sendable {
    /// A negative AVERROR, or -1 for the shim's own checks.
    public let code: Int32
    public let message: String
    public var description: String { "FFmpeg: \(message) (\(code))" }

    public init(code: Int32 = -1, message: String) {
        self.code = code
        self.message = message
    }

    /// The one place where the shim's errors become Swift errors: `body`
    /// calls a shim function with the error struct; a non-zero code, or a
    /// nil result from an `open`, throws what the shim wrote.
    @discardableResult
    static func check<Result>(_ body: (UnsafeMutablePointer<sl_av_error>) -> Result?) throws -> Result {
        var error = sl_av_error()
        let result = body(&error)
        if let result, error.code == 0 { return result }
        let message = withUnsafeBytes(of: &error.message) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        throw AVError(code: error.code == 0 ? -1 : error.code, message: message.isEmpty ? "unknown error" : message)
    }
}
