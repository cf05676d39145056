import CSightlineTLS

/// An error that came back from the OpenSSL shim (CSightlineTLS).
public struct OpenSSLError: Error, CustomStringConvertible, Sendable {
    /// OpenSSL's packed error code; 0 when the shim itself refused.
    public let code: UInt
    public let message: String
    public var description: String { "OpenSSL: \(message)" }

    /// The one place where the shim's failures become Swift errors: `body`
    /// calls a shim function with the error struct and returns its status.
    public static func check(_ body: (UnsafeMutablePointer<sl_tls_error>) -> Int32) throws {
        var error = sl_tls_error()
        guard body(&error) == 0 else {
            let message = withUnsafeBytes(of: &error.message) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            throw OpenSSLError(code: UInt(error.code), message: message)
        }
    }
}
