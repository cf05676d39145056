import Foundation
import Synchronization
import Testing
@testable import SightlineSupport
@testable import SightlineHTTP

/// AuthGuard on its own: which credential a request presents, what each
/// access needs, and the per-address slow-down after wrong credentials
/// (with a clock the test moves, so no test waits).
@Suite struct AuthGuardTests {
    final class Clock: Sendable {
        private let seconds = Locked(1_000.0)
        var now: Double { seconds.withLock { $0 } }
        func advance(_ by: Double) { seconds.withLock { $0 += by } }
    }

    static func guardWith(viewOpen: Bool = true, clock: Clock = Clock(), origins: [String] = []) -> AuthGuard {
        AuthGuard(tokens: TokenStore(fixed: [(name: "boss", role: .admin, token: "admin-token"),
                                             (name: "tv", role: .viewer, token: "viewer-token")]),
                  policy: AccessPolicy(viewOpen: viewOpen, loopbackBound: true, allowedOrigins: origins),
                  now: { clock.now })
    }

    static func request(_ method: HTTPRequest.Method = .post, headers: [String: String] = [:],
                        peer: String = "127.0.0.1") -> HTTPRequest {
        HTTPRequest(method: method, path: "/api/x", headers: headers, peer: peer)
    }

    static func basic(_ user: String, _ password: String) -> String {
        "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }

    static func error(_ response: HTTPResponse?) -> String? {
        guard let data = response?.bodyData,
              let body = try? JSONSerialization.jsonObject(with: data) as? [String: String] else { return nil }
        return body["error"]
    }

    @Test func bearerBasicAndSessionCookieAreCredentials() {
        let auth = Self.guardWith()
        #expect(auth.credential(for: Self.request(headers: ["authorization": "Bearer admin-token"])).credential?.name == "boss")
        #expect(auth.credential(for: Self.request(headers: ["authorization": "bearer admin-token"])).credential?.role == .admin)
        #expect(auth.credential(for: Self.request(headers: ["authorization": Self.basic("anyone", "viewer-token")]))
            .credential == Credential(name: "tv", role: .viewer))
        // The token is the password; a user name alone is nothing.
        #expect(auth.credential(for: Self.request(headers: ["authorization": Self.basic("admin-token", "")])).credential == nil)
        let session = auth.sessions.open(for: Credential(name: "boss", role: .admin))
        let withCookie = Self.request(headers: ["cookie": "theme=dark; \(SessionStore.cookieName)=\(session)"])
        #expect(auth.credential(for: withCookie).credential?.name == "boss")
        let nothing = auth.credential(for: Self.request())
        #expect(nothing.credential == nil && !nothing.presented)
        let wrong = auth.credential(for: Self.request(headers: ["authorization": "Bearer nope"]))
        #expect(wrong.credential == nil && wrong.presented)
    }

    /// Signing in is slowed like any other wrong credential, with viewing open
    /// or not; someone else's failures never slow a right token from elsewhere.
    @Test(arguments: [true, false]) func wrongSignInsAreSlowedWhateverTheViewingSetting(viewOpen: Bool) {
        let clock = Clock()
        let auth = Self.guardWith(viewOpen: viewOpen, clock: clock)
        let guesser = Self.request(peer: "127.0.0.9")
        var statuses: [Int] = []
        for _ in 0..<20 {
            if case .refused(let refusal) = auth.signIn(token: "guess", from: guesser) { statuses.append(refusal.status) }
            clock.advance(0.01)
        }
        #expect(statuses.count == 20)
        #expect(statuses.prefix(AuthGuard.freeFailures + 1).allSatisfy { $0 == 401 }, "\(statuses)")
        #expect(statuses.suffix(20 - AuthGuard.freeFailures - 1).allSatisfy { $0 == 429 }, "\(statuses)")
        // The right token from the slowed address waits too; from another address it signs in at once.
        if case .signedIn = auth.signIn(token: "admin-token", from: guesser) { Issue.record("a slowed address signed in") }
        guard case .signedIn(let credential) = auth.signIn(token: "admin-token", from: Self.request(peer: "127.0.0.10")) else {
            Issue.record("the right token from another address was refused")
            return
        }
        #expect(credential.name == "boss")
    }

    @Test func eachAccessNeedsItsRole() {
        let auth = Self.guardWith()
        let admin = ["authorization": "Bearer admin-token"], viewer = ["authorization": "Bearer viewer-token"]
        #expect(auth.refusal(for: Self.request(headers: admin), needs: .admin) == nil)
        let viewerChanging = auth.refusal(for: Self.request(headers: viewer), needs: .admin)
        #expect(viewerChanging?.status == 403 && Self.error(viewerChanging) == "not allowed")
        let nobody = auth.refusal(for: Self.request(), needs: .admin)
        #expect(nobody?.status == 401 && Self.error(nobody) == "sign in")
        // Viewing is open here (loopback): no credential needed, none asked for.
        #expect(auth.refusal(for: Self.request(.get), needs: .viewer) == nil)
        #expect(auth.refusal(for: Self.request(), needs: .anyone) == nil)
    }

    @Test func closedViewingAsksForACredentialWithABasicChallenge() {
        let auth = Self.guardWith(viewOpen: false)
        let refused = auth.refusal(for: Self.request(.get), needs: .viewer)
        #expect(refused?.status == 401)
        #expect(refused?.headers.contains { $0.0 == "www-authenticate:" && $0.1.hasPrefix("Basic ") } == true)
        #expect(auth.refusal(for: Self.request(.get, headers: ["authorization": Self.basic("x", "viewer-token")]), needs: .viewer) == nil)
        #expect(auth.refusal(for: Self.request(.get, headers: ["authorization": "Bearer admin-token"]), needs: .viewer) == nil)
        // Signing in and the health check stay open.
        #expect(auth.refusal(for: Self.request(.get), needs: .anyone) == nil)
    }

    @Test func aForeignOriginMayNotChangeAnythingEvenWithAToken() {
        let auth = Self.guardWith(origins: ["https://ha.example"])
        let admin = "Bearer admin-token"
        let foreign = Self.request(headers: ["authorization": admin, "origin": "https://evil.example", "host": "127.0.0.1:8080"])
        #expect(auth.refusal(for: foreign, needs: .admin)?.status == 403)
        let null = Self.request(headers: ["authorization": admin, "origin": "null", "host": "127.0.0.1:8080"])
        #expect(auth.refusal(for: null, needs: .admin)?.status == 403)
        let own = Self.request(headers: ["authorization": admin, "origin": "http://127.0.0.1:8080", "host": "127.0.0.1:8080"])
        #expect(auth.refusal(for: own, needs: .admin) == nil)
        let allowed = Self.request(headers: ["authorization": admin, "origin": "https://ha.example", "host": "127.0.0.1:8080"])
        #expect(auth.refusal(for: allowed, needs: .admin) == nil)
        // Reading from a foreign page is a matter for the browser's CORS, not a change.
        #expect(auth.refusal(for: Self.request(.get, headers: ["origin": "https://evil.example"]), needs: .viewer) == nil)
    }

    @Test func wrongCredentialsSlowDownOnlyTheirAddress() {
        let clock = Clock()
        let auth = Self.guardWith(clock: clock)
        let wrong = Self.request(headers: ["authorization": "Bearer guess"], peer: "10.0.0.7")
        for _ in 0..<AuthGuard.freeFailures {
            #expect(auth.refusal(for: wrong, needs: .admin)?.status == 401)
        }
        // One more failure blocks the address for a second, doubling with each further one.
        #expect(auth.refusal(for: wrong, needs: .admin)?.status == 401)
        let blocked = auth.refusal(for: wrong, needs: .admin)
        #expect(blocked?.status == 429 && blocked?.headers.contains { $0.0 == "retry-after:" && $0.1 == "1" } == true)
        // Even the right token waits there, while everyone else is served.
        let rightThere = Self.request(headers: ["authorization": "Bearer admin-token"], peer: "10.0.0.7")
        #expect(auth.refusal(for: rightThere, needs: .admin)?.status == 429)
        let elsewhere = Self.request(headers: ["authorization": "Bearer admin-token"], peer: "10.0.0.8")
        #expect(auth.refusal(for: elsewhere, needs: .admin) == nil)
        clock.advance(1.5)
        #expect(auth.refusal(for: rightThere, needs: .admin) == nil)
        #expect(auth.refusal(for: wrong, needs: .admin)?.status == 401)
        let longer = auth.refusal(for: wrong, needs: .admin)
        #expect(longer?.status == 429 && longer?.headers.contains { $0.0 == "retry-after:" && $0.1 == "2" } == true)
        // Failures older than the window are forgotten.
        clock.advance(AuthGuard.window + 1)
        #expect(auth.refusal(for: wrong, needs: .admin)?.status == 401)
        #expect(auth.refusal(for: rightThere, needs: .admin) == nil)
    }
}
