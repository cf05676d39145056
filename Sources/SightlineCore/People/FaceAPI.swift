import Foundation
import SightlineVision
import SightlineSupport
import SightlinePipeline
import SightlineHTTP
import SightlineEvents

/// The HTTP endpoints of face recognition:
/// - `POST /api/faces/{id}/name` `{"name": "Ada"}`: learn that tracked face as Ada;
/// - `POST /api/faces/{id}/feedback` `{"correct": true}` or `{"name": "Bob"}`;
/// - `GET /api/people`; `DELETE /api/people/NAME`.
/// Mutating calls need an admin credential (the route table says so). Errors
/// are `{"error": ..., "detail": ...}` with a 4xx status saying what to do.
/// All state is in FaceService.
public struct FaceAPI: Sendable {
    public let service: FaceService
    /// Bodies larger than this are refused before decoding.
    static let maxBodyBytes = 4096

    public init(service: FaceService) {
        self.service = service
    }

    /// Its entries in the route table. Naming and feedback train and save
    /// the LBPH model, so they run on the RequestWorker; so does the people
    /// list, which waits for the model while it is being trained.
    public var routes: [Route] {
        [
            Route(.get, "/api/people", access: .viewer, .worker) { [service] _ in .json(["people": service.people()]) },
            Route(.delete, "/api/people/{name}", access: .admin, .worker) { [self] request in
                deletePerson(request.parameters["name"] ?? "")
            },
            Route(.post, "/api/faces/{id}/name", access: .admin, .worker) { [self] request in
                name(request.parameters["id"] ?? "", request.body)
            },
            Route(.post, "/api/faces/{id}/feedback", access: .admin, .worker) { [self] request in
                feedback(request.parameters["id"] ?? "", request.body)
            },
        ]
    }

    private struct NameBody: Decodable { var name: String }
    private struct FeedbackBody: Decodable { var correct: Bool?; var name: String? }

    private func name(_ rawID: String, _ body: Data) -> HTTPResponse {
        trackID(rawID)
            .flatMap { id in decode(NameBody.self, body, example: #"{"name": "Ada"}"#).map { (id, $0) } }
            .flatMap { id, body in PersonName.validated(body.name).map { (id, $0) } }
            .flatMap { id, name in service.name(trackID: id, as: name) }
            .response
    }

    private func feedback(_ rawID: String, _ body: Data) -> HTTPResponse {
        trackID(rawID)
            .flatMap { id in
                decode(FeedbackBody.self, body, example: #"{"correct": true} or {"name": "Bob"}"#).map { (id, $0) }
            }
            .flatMap { id, body -> Result<EnrollmentResult, FaceServiceError> in
                guard let raw = body.name else { return service.feedback(trackID: id, correct: body.correct, name: nil) }
                return PersonName.validated(raw).flatMap { service.feedback(trackID: id, correct: body.correct, name: $0) }
            }
            .response
    }

    private func deletePerson(_ raw: String) -> HTTPResponse {
        PersonName.validated(raw)
            .flatMap { service.removePerson(named: $0) }
            .map { ["deleted": $0] }
            .response
    }

    private func trackID(_ raw: String) -> Result<Int, FaceServiceError> {
        guard let id = Int(raw), id > 0 else {
            return .failure(FaceServiceError(status: 400, error: "bad face id",
                                             detail: "'\(raw.prefix(32))' is not a face id; use the id of a /ws face detection"))
        }
        return .success(id)
    }

    private func decode<T: Decodable>(_ type: T.Type, _ body: Data, example: String) -> Result<T, FaceServiceError> {
        guard body.count <= Self.maxBodyBytes else {
            return .failure(FaceServiceError(status: 413, error: "body too large",
                                             detail: "send at most \(Self.maxBodyBytes) bytes, like \(example)"))
        }
        do {
            return .success(try JSONDecoder().decode(T.self, from: body))
        } catch {
            return .failure(FaceServiceError(status: 400, error: "malformed JSON",
                                             detail: "send a JSON body like \(example)"))
        }
    }
}

extension Result where Success: Encodable, Failure == FaceServiceError {
    /// 200 with the value as JSON, or the error's status and JSON body.
    var response: HTTPResponse {
        switch self {
        case .success(let value): return .json(value)
        case .failure(let error): return .error(error.status, error.error, detail: error.detail)
        }
    }
}
