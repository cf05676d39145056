import Foundation

/// An HTTP request as the router sees it (method, path, query, a few
/// headers, and the body when there is one).
public struct HTTPRequest: Sendable {
    public enum Method: String, Sendable { case get = "GET", post = "POST", put = "PUT", patch = "PATCH",
                                               delete = "DELETE", options = "OPTIONS", head = "HEAD", other = "OTHER" }
    public var method: Method
    public var path: String
    public var query: [String: String]
    public var headers: [String: String]
    public var body: Data
    public var peer: String

    public init(method: Method, path: String, query: [String: String] = [:], headers: [String: String] = [:],
                body: Data = Data(), peer: String = "") {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.peer = peer
    }

    /// The token from `Authorization: Bearer <token>`, if any.
    public var bearerToken: String? {
        guard let value = headers["authorization"] else { return nil }
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return String(parts[1]).trimmingCharacters(in: .whitespaces)
    }
}
