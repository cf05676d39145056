import Foundation
import Synchronization

/// Checks the bearer token of mutating calls and slows down addresses that
/// keep getting it wrong: after `freeFailures` failures within a minute, an
/// address is refused (429, with Retry-After) for a time that doubles with
/// each further failure, up to a minute, even with the right token. The
/// server's thread never sleeps for it, so everyone else keeps being served.
///
/// Threads: called on the lws service thread (and from tests); the
/// per-address records are in a `Mutex`.
public final class AuthGuard: Sendable {
    public static let freeFailures = 5
    public static let window = 60.0
    public static let maximumBlock = 60.0
    static let maximumTracked = 4096

    struct Record { var failures: [Double] = []; var blockedUntil = 0.0 }

    public let token: AccessToken
    private let now: @Sendable () -> Double
    private let records = Mutex<[String: Record]>([:])

    public init(token: AccessToken, now: @escaping @Sendable () -> Double = { MonotonicClock.wallSeconds() }) {
        self.token = token
        self.now = now
    }

    /// nil when the request may make a call that needs `access`; otherwise
    /// the refusal to send. Viewing is open (the server is bound to loopback).
    public func refusal(for request: HTTPRequest, needs access: Access) -> HTTPResponse? {
        access == .admin ? refusal(for: request) : nil
    }

    /// nil when the request carries the admin token; otherwise the refusal to send.
    public func refusal(for request: HTTPRequest) -> HTTPResponse? {
        let address = request.peer.isEmpty ? "unknown" : request.peer
        let time = now()
        return records.withLock { records -> HTTPResponse? in
            var record = records[address] ?? Record()
            if record.blockedUntil > time {
                return Self.tooMany(retryAfter: record.blockedUntil - time)
            }
            if token.matches(request.bearerToken) { return nil }
            record.failures = record.failures.filter { time - $0 < Self.window } + [time]
            let excess = record.failures.count - Self.freeFailures
            if excess > 0 {
                record.blockedUntil = time + min(Self.maximumBlock, pow(2, Double(excess - 1)))
            }
            if records.count >= Self.maximumTracked { records = records.filter { $0.value.blockedUntil > time } }
            records[address] = record
            return .error(401, "missing or wrong token",
                          detail: "send the server's token as 'Authorization: Bearer <token>' "
                              + "(SIGHTLINE_TOKEN, the config, or <data-dir>/token)")
        }
    }

    private static func tooMany(retryAfter seconds: Double) -> HTTPResponse {
        var response = HTTPResponse.error(429, "too many failed attempts",
                                          detail: "wait \(Int(seconds.rounded(.up))) s before trying again")
        response.headers.append(("retry-after:", "\(Int(seconds.rounded(.up)))"))
        return response
    }
}
