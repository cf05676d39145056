import Foundation
import Synchronization
import SightlineSupport

/// Who may make a call: finds the caller's credential (a Bearer token, HTTP
/// Basic with the token as the password, or the page's session cookie),
/// checks the route's access against its role and the access policy (open
/// viewing, Origin), and slows down addresses that keep presenting wrong
/// credentials: after `freeFailures` failures within a minute, an address is
/// refused (429, with Retry-After) for a time that doubles with each further
/// failure, up to a minute. Only that address: a correct credential from
/// anywhere else is never locked out by someone else's failures. The
/// server's thread never sleeps for it.
///
/// Threads: called on the lws service thread (and from tests); the
/// per-address records are in a `Mutex`; the token and session stores guard
/// their own state.
public final class AuthGuard: Sendable {
    public static let freeFailures = 5
    public static let window = 60.0
    public static let maximumBlock = 60.0
    static let maximumTracked = 4096

    struct Record { var failures: [Double] = []; var blockedUntil = 0.0 }

    public let tokens: TokenStore
    public let sessions: SessionStore
    public let policy: AccessPolicy
    private let now: @Sendable () -> Double
    private let records = Locked<[String: Record]>([:])

    public init(tokens: TokenStore, sessions: SessionStore = SessionStore(), policy: AccessPolicy,
                now: @escaping @Sendable () -> Double = { MonotonicClock.wallSeconds() }) {
        self.tokens = tokens
        self.sessions = sessions
        self.policy = policy
        self.now = now
    }

    /// The credential a request presents, and whether it presented any.
    public func credential(for request: HTTPRequest) -> (credential: Credential?, presented: Bool) {
        var presented = false
        if let token = request.bearerToken ?? request.basicPassword {
            presented = true
            if let credential = tokens.credential(for: token) { return (credential, true) }
        }
        if let id = SessionStore.id(in: request) {
            presented = true
            if let credential = sessions.credential(for: id) {
                if tokens.isValid(credential) { return (credential, true) }
                sessions.close(credentialNamed: credential.name)
            }
        }
        return (nil, presented)
    }

    /// nil when the request may make a call that needs `access`; otherwise the refusal to send.
    public func refusal(for request: HTTPRequest, needs access: Access) -> HTTPResponse? {
        let changes = access == .admin || ![.get, .head].contains(request.method)
        if changes, let refusal = policy.originRefusal(request) { return refusal }
        if access == .anyone || (access == .viewer && policy.viewOpen) { return nil }
        let address = Self.address(of: request)
        let time = now()
        if let slowed = slowedDown(address, at: time) { return slowed }
        let (credential, presented) = credential(for: request)
        guard let credential else {
            if presented { recordFailure(address, at: time) }
            var response = HTTPResponse.error(401, presented ? "wrong credential" : "sign in",
                                              detail: access == .admin
                                                  ? "send an admin token as 'Authorization: Bearer <token>' (SIGHTLINE_TOKEN, "
                                                      + "the config, <data-dir>/token or `sightline token add`)"
                                                  : "send a token as 'Authorization: Bearer <token>', as the password of HTTP "
                                                      + "Basic, or sign in on the page")
            // The Basic challenge is for players, Home Assistant and a typed URL (no
            // Sec-Fetch-Mode, or "navigate"). The page's own requests (fetch, its
            // WebSocket, images) get none: a browser would open its own prompt over
            // the page, which has a sign-in.
            let mode = request.headers["sec-fetch-mode"]?.lowercased()
            if access == .viewer && (mode == nil || mode == "navigate") {
                response.headers.append(("www-authenticate:", "Basic realm=\"Sightline\", charset=\"UTF-8\""))
            }
            return response
        }
        guard credential.role.allows(access == .admin ? .admin : .viewer) else {
            return .error(403, "not allowed", detail: "'\(credential.name)' is a \(credential.role.rawValue) token; this needs admin")
        }
        return nil
    }

    /// What signing in with `token` gives: its credential, or the refusal
    /// (429 while the request's address is slowed down; 401, counted as a
    /// failure, for a token not known here). Whatever the viewing setting:
    /// with viewing open a wrong token costs nothing else, so guessing would
    /// otherwise be free.
    public enum SignIn: Sendable { case signedIn(Credential), refused(HTTPResponse) }

    public func signIn(token: String, from request: HTTPRequest) -> SignIn {
        let address = Self.address(of: request)
        let time = now()
        if let slowed = slowedDown(address, at: time) { return .refused(slowed) }
        guard let credential = tokens.credential(for: token) else {
            recordFailure(address, at: time)
            return .refused(.error(401, "wrong token", detail: "that token is not known here"))
        }
        return .signedIn(credential)
    }

    private static func address(of request: HTTPRequest) -> String {
        request.peer.isEmpty ? "unknown" : request.peer
    }

    /// The 429 for an address that failed too often lately, else nil.
    private func slowedDown(_ address: String, at time: Double) -> HTTPResponse? {
        guard let blocked = records.withLock({ $0[address].map(\.blockedUntil) }), blocked > time else { return nil }
        return Self.tooMany(retryAfter: blocked - time)
    }

    private func recordFailure(_ address: String, at time: Double) {
        records.withLock { records in
            var record = records[address] ?? Record()
            record.failures = record.failures.filter { time - $0 < Self.window } + [time]
            let excess = record.failures.count - Self.freeFailures
            if excess > 0 {
                record.blockedUntil = time + min(Self.maximumBlock, pow(2, Double(excess - 1)))
            }
            if records.count >= Self.maximumTracked { records = records.filter { $0.value.blockedUntil > time } }
            records[address] = record
        }
    }

    private static func tooMany(retryAfter seconds: Double) -> HTTPResponse {
        var response = HTTPResponse.error(429, "too many failed attempts",
                                          detail: "wait \(Int(seconds.rounded(.up))) s before trying again")
        response.headers.append(("retry-after:", "\(Int(seconds.rounded(.up)))"))
        return response
    }
}
