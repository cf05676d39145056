import Foundation

/// An HTTP request as the router sees it: method, path (still
/// percent-encoded), the route's decoded path parameters, the query, every
/// header libwebsockets parsed (lowercase names), the body, and for
/// multipart forms the fields and file that lws_spa parsed.
public struct HTTPRequest: Sendable {
    public enum Method: String, Sendable { case get = "GET", post = "POST", put = "PUT", patch = "PATCH",
                                               delete = "DELETE", options = "OPTIONS", head = "HEAD", other = "OTHER" }
    public var method: Method
    public var path: String
    public var query: [String: String]
    public var headers: [String: String]
    public var body: Data
    public var peer: String
    /// `{name}` segments of the matched route, percent-decoded.
    public var parameters: [String: String] = [:]
    /// A parsed multipart/form-data body, if it was one.
    public var form: Form?

    /// Fields and the first file of a form.
    public struct Form: Sendable, Equatable {
        public var fields: [String: String] = [:]
        public var fileName: String?
        public var fileField: String?
        public var file: Data?
        public init(fields: [String: String] = [:], fileName: String? = nil, fileField: String? = nil, file: Data? = nil) {
            self.fields = fields
            self.fileName = fileName
            self.fileField = fileField
            self.file = file
        }
    }

    public init(method: Method, path: String, query: [String: String] = [:], headers: [String: String] = [:],
                body: Data = Data(), peer: String = "") {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.peer = peer
    }

    /// The password of `Authorization: Basic` (any user name), which is
    /// where Home Assistant, VLC and ffmpeg put a token.
    public var basicPassword: String? {
        guard let value = headers["authorization"] else { return nil }
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "basic",
              let decoded = Data(base64Encoded: String(parts[1]).trimmingCharacters(in: .whitespaces)),
              let text = String(data: decoded, encoding: .utf8), let colon = text.firstIndex(of: ":") else { return nil }
        let password = String(text[text.index(after: colon)...])
        return password.isEmpty ? nil : password
    }

    /// The token from `Authorization: Bearer <token>`, if any.
    public var bearerToken: String? {
        guard let value = headers["authorization"] else { return nil }
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return String(parts[1]).trimmingCharacters(in: .whitespaces)
    }
}
