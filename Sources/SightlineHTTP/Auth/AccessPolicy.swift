import Foundation

/// The rules that do not depend on who the caller is: which `Host` a
/// loopback-bound server answers to (DNS rebinding), which `Origin` may open
/// `/ws` or make changes (other web pages), and whether viewing is open.
public struct AccessPolicy: Sendable {
    /// Viewing needs no credential.
    public var viewOpen: Bool
    /// Bound to a loopback address: only loopback names are valid `Host`s.
    public var loopbackBound: Bool
    /// Origins besides the server's own, lowercased `scheme://host[:port]`.
    public var allowedOrigins: Set<String>
    /// Host names besides localhost and the loopback addresses, lowercased.
    public var allowedHosts: Set<String>
    /// Served over TLS (the server's own origin is https://).
    public var tls: Bool

    public init(viewOpen: Bool, loopbackBound: Bool, allowedOrigins: [String] = [], allowedHosts: [String] = [],
                tls: Bool = false) {
        self.viewOpen = viewOpen
        self.loopbackBound = loopbackBound
        self.allowedOrigins = Set(allowedOrigins.map { $0.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "/")) })
        self.allowedHosts = Set(allowedHosts.map { $0.lowercased() })
        self.tls = tls
    }

    static let loopbackNames: Set<String> = ["localhost", "127.0.0.1", "[::1]"]

    /// 421 when a loopback-bound server is reached under another name (a
    /// rebinding page's name resolving to 127.0.0.1); nil otherwise.
    public func hostRefusal(_ request: HTTPRequest, port: Int) -> HTTPResponse? {
        guard loopbackBound, let host = request.headers["host"]?.lowercased() else { return nil }
        let (name, hostPort) = Self.split(host)
        let portMatches = hostPort == nil || hostPort == port
        if (Self.loopbackNames.contains(name) || allowedHosts.contains(name)) && portMatches { return nil }
        return .error(421, "misdirected request",
                      detail: "this server answers to localhost, 127.0.0.1 and [::1] (or access.allowedHosts), not '\(host)'")
    }

    /// 403 when the request carries an `Origin` that is neither the server's
    /// own (the scheme and the host it was reached by) nor allowed; nil otherwise.
    public func originRefusal(_ request: HTTPRequest) -> HTTPResponse? {
        guard let origin = request.headers["origin"]?.lowercased() else { return nil }
        if let host = request.headers["host"]?.lowercased(), origin == "\(tls ? "https" : "http")://\(host)" { return nil }
        if origin != "null", allowedOrigins.contains(origin) { return nil }
        return .error(403, "foreign origin",
                      detail: "a page from '\(origin)' may not use this server; add it to access.allowedOrigins to allow it")
    }

    /// CORS headers for an allowed foreign origin (none otherwise).
    public func corsHeaders(_ request: HTTPRequest) -> [(String, String)] {
        guard let origin = request.headers["origin"]?.lowercased(), allowedOrigins.contains(origin) else { return [] }
        return [("access-control-allow-origin:", origin), ("access-control-allow-credentials:", "true"), ("vary:", "Origin")]
    }

    static func split(_ host: String) -> (name: String, port: Int?) {
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
            let name = String(host[...close])
            let rest = host[host.index(after: close)...]
            return (name, rest.hasPrefix(":") ? Int(rest.dropFirst()) : nil)
        }
        let parts = host.split(separator: ":", maxSplits: 1)
        return (String(parts.first ?? ""), parts.count == 2 ? Int(parts[1]) : nil)
    }
}
