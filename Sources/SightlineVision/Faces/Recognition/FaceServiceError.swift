import Foundation

/// Why a naming, feedback or people request failed, as an HTTP status and
/// the JSON error body (`{"error": ..., "detail": ...}`) FaceAPI sends.
public struct FaceServiceError: Error, Sendable, Equatable {
    public var status: Int
    public var error: String
    public var detail: String

    public init(status: Int, error: String, detail: String) {
        self.status = status
        self.error = error
        self.detail = detail
    }

    package static func unknownTrack(_ id: Int) -> FaceServiceError {
        FaceServiceError(status: 404, error: "unknown face id",
                         detail: "no face \(id) is being tracked; use an id from a current /ws face detection")
    }

    package static func noFrontalCrop(_ id: Int) -> FaceServiceError {
        FaceServiceError(status: 409, error: "no frontal crop available",
                         detail: "face \(id) has not been seen near-frontal (|yaw| <= 20 degrees) with both eyes "
                             + "yet; ask the person to face the camera for a moment and try again")
    }

    package static func nothingToConfirm(_ id: Int) -> FaceServiceError {
        FaceServiceError(status: 409, error: "face has no name",
                         detail: "face \(id) is not recognised as anyone; name it with POST /api/faces/\(id)/name")
    }

    package static func unknownPerson(_ name: String) -> FaceServiceError {
        FaceServiceError(status: 404, error: "unknown person",
                         detail: "nobody called '\(name)' is enrolled; GET /api/people lists them")
    }

    static func badName(_ detail: String) -> FaceServiceError {
        FaceServiceError(status: 400, error: "bad name", detail: detail)
    }

    package static func modelFailure(_ error: Error) -> FaceServiceError {
        FaceServiceError(status: 500, error: "recognizer failed", detail: "\(error)")
    }
}
