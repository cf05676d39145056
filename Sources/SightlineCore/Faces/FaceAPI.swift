import Foundation

/// The HTTP endpoints of face recognition:
/// - `POST /api/faces/{id}/name` `{"name": "Ada"}`: learn that tracked face as Ada;
/// - `POST /api/faces/{id}/feedback` `{"correct": true}` or `{"name": "Bob"}`;
/// - `GET /api/people`; `DELETE /api/people/NAME`.
/// Mutating calls need `Authorization: Bearer <token>`. Errors are
/// `{"error": ..., "detail": ...}` with a 4xx status saying what to do.
///
/// Runs on the server's service thread; all state is in FaceService.
public struct FaceAPI: Sendable {
    public let service: FaceService
    public let auth: AuthGuard
    /// Bodies larger than this are refused before decoding.
    static let maxBodyBytes = 4096

    public init(service: FaceService, auth: AuthGuard) {
        self.service = service
        self.auth = auth
    }

    public init(service: FaceService, token: AccessToken) {
        self.init(service: service, auth: AuthGuard(token: token))
    }

    /// The answer for a path this API owns, nil for any other path.
    public func respond(to request: HTTPRequest) -> HTTPResponse? {
        guard let route = Route(path: request.path) else { return nil }
        switch (route, request.method) {
        case (.people, .get), (.people, .head):
            return .json(["people": service.people()])
        case (.person(let name), .delete):
            return authorized(request) { deletePerson(name) }
        case (.faceName(let id), .post):
            return authorized(request) { name(id, request.body) }
        case (.faceFeedback(let id), .post):
            return authorized(request) { feedback(id, request.body) }
        case (.people, _):
            return .error(405, "method not allowed", detail: "use GET /api/people")
        case (.person, _):
            return .error(405, "method not allowed", detail: "use DELETE /api/people/NAME")
        case (.faceName, _), (.faceFeedback, _):
            return .error(405, "method not allowed", detail: "use POST with a JSON body")
        }
    }

    /// Paths this API answers.
    enum Route: Equatable {
        case people
        case person(String)
        case faceName(String)
        case faceFeedback(String)

        init?(path: String) {
            let parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            switch parts.count {
            case 3 where parts[1] == "api" && parts[2] == "people":
                self = .people
            case 4 where parts[1] == "api" && parts[2] == "people":
                self = .person(parts[3].removingPercentEncoding ?? parts[3])
            case 5 where parts[1] == "api" && parts[2] == "faces" && parts[4] == "name":
                self = .faceName(parts[3])
            case 5 where parts[1] == "api" && parts[2] == "faces" && parts[4] == "feedback":
                self = .faceFeedback(parts[3])
            default:
                return nil
            }
        }
    }

    private func authorized(_ request: HTTPRequest, _ body: () -> HTTPResponse) -> HTTPResponse {
        auth.refusal(for: request) ?? body()
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
