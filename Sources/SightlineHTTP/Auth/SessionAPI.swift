import Foundation

/// Signing the browser page in and out:
/// - `POST /api/session` `{"token": "..."}`: a session cookie for that
///   token's role (HttpOnly, SameSite=Strict, Secure under TLS, expiring);
/// - `GET /api/session`: who the request is signed in as, and what it may do;
/// - `DELETE /api/session`: signs out.
/// The token travels in the body, never in a URL.
public struct SessionAPI: Sendable {
    let auth: AuthGuard

    public init(auth: AuthGuard) { self.auth = auth }

    public var routes: [Route] {
        [
            Route(.post, "/api/session", access: .anyone) { request in signIn(request) },
            Route(.get, "/api/session", access: .anyone) { request in whoAmI(request) },
            Route(.delete, "/api/session", access: .anyone) { request in signOut(request) },
        ]
    }

    private struct SignIn: Decodable { var token: String }
    struct Who: Encodable { var signedIn: Bool; var name: String?; var role: String?; var viewOpen: Bool; var mayChange: Bool }

    private func signIn(_ request: HTTPRequest) -> HTTPResponse {
        if let refusal = auth.policy.originRefusal(request) { return refusal }
        guard request.body.count <= 4096, let body = try? JSONDecoder().decode(SignIn.self, from: request.body) else {
            return .error(400, "bad body", detail: #"send {"token": "..."}"#)
        }
        let credential: Credential
        switch auth.signIn(token: body.token, from: request) {
        case .signedIn(let known): credential = known
        case .refused(let refusal): return refusal
        }
        let id = auth.sessions.open(for: credential)
        var response = HTTPResponse.json(Who(signedIn: true, name: credential.name, role: credential.role.rawValue,
                                             viewOpen: auth.policy.viewOpen, mayChange: credential.role == .admin))
        response.headers.append(("set-cookie:", cookie(id, maxAge: Int(auth.sessions.lifetime))))
        response.headers.append(("cache-control:", "no-store"))
        return response
    }

    private func whoAmI(_ request: HTTPRequest) -> HTTPResponse {
        let credential = auth.credential(for: request).credential
        return .json(Who(signedIn: credential != nil, name: credential?.name, role: credential?.role.rawValue,
                         viewOpen: auth.policy.viewOpen, mayChange: credential?.role == .admin))
    }

    private func signOut(_ request: HTTPRequest) -> HTTPResponse {
        if let refusal = auth.policy.originRefusal(request) { return refusal }
        if let id = SessionStore.id(in: request) { auth.sessions.close(id) }
        var response = HTTPResponse.json(["signedIn": false])
        response.headers.append(("set-cookie:", cookie("", maxAge: 0)))
        return response
    }

    private func cookie(_ value: String, maxAge: Int) -> String {
        "\(SessionStore.cookieName)=\(value); Path=/; Max-Age=\(maxAge); HttpOnly; SameSite=Strict"
            + (auth.policy.tls ? "; Secure" : "")
    }
}
