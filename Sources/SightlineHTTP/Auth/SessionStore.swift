import Foundation
import Synchronization
import SightlineSupport

/// Sign-in sessions for the browser page, which cannot put headers on a
/// WebSocket: `POST /api/session` trades a token for a random session id in
/// an HttpOnly, SameSite=Strict cookie. A session lasts `lifetime` seconds,
/// ends on `DELETE /api/session`, and ends with its token (checked on each
/// use against the token store). Kept in memory (a restart signs everyone
/// out), at most `capacity`, the oldest dropped first; in a `Mutex`.
public final class SessionStore: Sendable {
    public static let cookieName = "sightline_session"

    struct Session: Sendable {
        let credential: Credential
        let expires: Double
        let created: Double
    }

    public let lifetime: Double
    public let capacity: Int
    private let sessions = Locked<[String: Session]>([:])
    private let now: @Sendable () -> Double

    public init(lifetime: Double = 12 * 3600, capacity: Int = 1024,
                now: @escaping @Sendable () -> Double = { MonotonicClock.wallSeconds() }) {
        self.lifetime = lifetime
        self.capacity = capacity
        self.now = now
    }

    /// A new session for `credential`; returns its id.
    public func open(for credential: Credential) -> String {
        let id = TokenStore.makeToken()
        let time = now()
        sessions.withLock { sessions in
            sessions = sessions.filter { $0.value.expires > time }
            if sessions.count >= capacity, let oldest = sessions.min(by: { $0.value.created < $1.value.created })?.key {
                sessions.removeValue(forKey: oldest)
            }
            sessions[id] = Session(credential: credential, expires: time + lifetime, created: time)
        }
        return id
    }

    /// The session's credential while it lasts.
    public func credential(for id: String) -> Credential? {
        let time = now()
        return sessions.withLock { sessions in
            guard let session = sessions[id] else { return nil }
            guard session.expires > time else {
                sessions.removeValue(forKey: id)
                return nil
            }
            return session.credential
        }
    }

    public func close(_ id: String) {
        _ = sessions.withLock { $0.removeValue(forKey: id) }
    }

    /// Ends every session of a credential (its token was revoked).
    public func close(credentialNamed name: String) {
        sessions.withLock { $0 = $0.filter { $0.value.credential.name != name } }
    }

    /// The session id in a request's Cookie header, if any.
    public static func id(in request: HTTPRequest) -> String? {
        guard let cookies = request.headers["cookie"] else { return nil }
        for item in cookies.split(separator: ";") {
            let pair = item.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            if pair.count == 2, pair[0] == cookieName { return String(pair[1]) }
        }
        return nil
    }
}
