import Foundation

/// A failed V4L2 call: which operation and the errno it left.
///
/// LinuxV4L2Device makes these in one function; fakes make them with the
/// errno a driver would have set.
public struct V4L2Error: Error, CustomStringConvertible, Sendable, Equatable {
    public let operation: String
    public let code: Int32

    public init(operation: String, code: Int32) {
        self.operation = operation
        self.code = code
    }

    public var description: String { "\(operation): \(String(cString: strerror(code))) (errno \(code))" }

    /// The driver does not implement the request (or has nothing at that index).
    public var isNotSupported: Bool { code == EINVAL || code == ENOTTY }

    /// A non-blocking call found nothing ready.
    public var isWouldBlock: Bool { code == EAGAIN || code == EWOULDBLOCK }
}
