import Foundation
import SightlineSupport

extension HTTPResponse {
    /// `{"error": "cannot save the template", "detail": "no space left on the device (the disk is full); ..."}`
    /// with 507 when the disk is full, 500 otherwise.
    package static func storageFailure(_ error: StorageError, action: String) -> HTTPResponse {
        .error(error.httpStatus, action, detail: "\(error.reason); \(error.reason.hint)")
    }
}
