import CSightlineOpenCV

/// An error that came back from the OpenCV shim.
public struct OpenCVError: Error, CustomStringConvertible, Sendable {
    public let code: Int32
    public let message: String
    public var description: String { "OpenCV error \(code): \(message)" }

    /// The one place where the shim's error codes become Swift errors:
    /// `body` calls a shim function with the error struct and returns its code.
    @discardableResult
    public static func check(_ body: (UnsafeMutablePointer<slcv_error>) -> Int32) throws -> Int32 {
        var error = slcv_error()
        let code = body(&error)
        guard code == 0 else {
            let message = withUnsafeBytes(of: &error.message) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            throw OpenCVError(code: code, message: message)
        }
        return code
    }
}
