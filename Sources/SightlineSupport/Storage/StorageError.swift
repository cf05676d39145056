import Foundation

/// Why a file in the data directory could not be written, in words a user
/// can act on. `description` never holds a path (the answer goes to HTTP
/// clients and into the log); `path` is kept for the operator's own
/// messages (the startup error on the console) and for tests.
///
/// Made in one place from an errno (`init(errno:path:)`), or from a
/// Foundation error carrying one (`init(_:path:)`), so every caller words a
/// full disk the same way: "cannot save the template: no space left on the
/// device".
public struct StorageError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: Sendable, Equatable, CustomStringConvertible {
        /// ENOSPC.
        case noSpace
        /// EDQUOT.
        case quotaExceeded
        /// EROFS.
        case readOnly
        /// EACCES, EPERM.
        case permissionDenied
        /// A library wrote the file without saying it failed, and it came
        /// out cut short (OpenCV's FileStorage does not check its writes).
        case incomplete
        /// Any other errno.
        case other(Int32)

        public init(errno code: Int32) {
            switch code {
            case ENOSPC: self = .noSpace
            case EDQUOT: self = .quotaExceeded
            case EROFS: self = .readOnly
            case EACCES, EPERM: self = .permissionDenied
            default: self = .other(code)
            }
        }

        public var description: String {
            switch self {
            case .noSpace: return "no space left on the device (the disk is full)"
            case .quotaExceeded: return "the disk quota is exceeded"
            case .readOnly: return "the file system is read-only"
            case .permissionDenied: return "permission denied (the server may not write in its data directory)"
            case .incomplete: return "the file could not be written whole"
            case .other(let code): return String(cString: strerror(code)).lowercased()
            }
        }

        /// What to do about it, for an answer to a user.
        public var hint: String {
            switch self {
            case .noSpace, .quotaExceeded: return "free some space in the server's data directory and try again"
            case .readOnly: return "the server's data directory must be on a writable file system"
            case .permissionDenied: return "the server's user must be allowed to write in its data directory"
            case .incomplete, .other: return "check the disk that holds the server's data directory"
            }
        }

        /// The disk is full for this user: 507 Insufficient Storage. Anything
        /// else is the server's own trouble: 500.
        public var httpStatus: Int {
            switch self {
            case .noSpace, .quotaExceeded: return 507
            default: return 500
            }
        }
    }

    public var reason: Reason
    /// The file or directory that could not be written. Never part of `description`.
    public var path: String

    public init(reason: Reason, path: String) {
        self.reason = reason
        self.path = path
    }

    public init(errno code: Int32, path: String) {
        self.init(reason: Reason(errno: code), path: path)
    }

    /// A Foundation error about a file (FileManager, Data.write) read for the
    /// errno behind it; nil when it carries none (then it is no storage error).
    public init?(_ error: Error, path: String) {
        if let storage = error as? StorageError {
            self = storage
            return
        }
        let ns = error as NSError
        if ns.domain == NSPOSIXErrorDomain {
            self.init(errno: Int32(ns.code), path: path)
            return
        }
        if let underlying = ns.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
            self.init(errno: Int32(underlying.code), path: path)
            return
        }
        guard ns.domain == NSCocoaErrorDomain else { return nil }
        switch CocoaError.Code(rawValue: ns.code) {
        case .fileWriteOutOfSpace: self.init(reason: .noSpace, path: path)
        case .fileWriteVolumeReadOnly: self.init(reason: .readOnly, path: path)
        case .fileWriteNoPermission, .fileReadNoPermission: self.init(reason: .permissionDenied, path: path)
        default: return nil
        }
    }

    public var description: String { reason.description }

    public var httpStatus: Int { reason.httpStatus }

    /// "cannot save the template: no space left on the device".
    public func message(_ action: String) -> String { "\(action): \(reason)" }
}

/// What a write to the data directory was for, as counted in `/api/state`
/// (`storage.writeFailures`) and `/metrics`
/// (`sightline_storage_write_failures_total{area=...}`).
public enum StorageArea: String, CaseIterable, Sendable {
    /// Uploaded templates and their index.
    case templates
    /// Event records, snapshots and crops.
    case events
    /// The people index and the recognizer's model.
    case faces
}
