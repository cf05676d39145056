import Foundation

/// What a route answers: a whole body, or the start of one that never ends (an MJPEG stream).
public struct HTTPResponse: Sendable {
    public enum Body: Sendable {
        case data(Data)
        /// A body that goes on for as long as the client reads, written by the
        /// server's `StreamProvider` (`bodyStream`), which reads `what` (for
        /// example an MJPEG stream's picture size).
        case stream(any Sendable)
    }

    public var status: Int
    public var contentType: String
    public var headers: [(String, String)]
    public var body: Body
    /// A HEAD answer's `Content-Length` when its body was left out (a file
    /// not read for a HEAD); nil: the body's length.
    public var headLength: Int?

    public init(status: Int = 200, contentType: String, headers: [(String, String)] = [], body: Body) {
        self.status = status
        self.contentType = contentType
        self.headers = headers
        self.body = body
    }

    public static func data(_ data: Data, contentType: String, status: Int = 200,
                            headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, contentType: contentType, headers: headers, body: .data(data))
    }

    public static func text(_ text: String, contentType: String = "text/plain; charset=utf-8",
                            status: Int = 200) -> HTTPResponse {
        .data(Data(text.utf8), contentType: contentType, status: status)
    }

    public static func json<T: Encodable>(_ value: T, status: Int = 200) -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return .data(try encoder.encode(value), contentType: "application/json", status: status)
        } catch {
            return .error(500, "encoding failed", detail: "\(error)")
        }
    }

    /// The error shape every endpoint uses: {"error": "...", "detail": "..."}.
    public static func error(_ status: Int, _ error: String, detail: String = "") -> HTTPResponse {
        let body = ["error": error, "detail": detail]
        let data = (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])) ?? Data()
        return .data(data, contentType: "application/json", status: status)
    }

    public var bodyData: Data? {
        if case .data(let data) = body { return data }
        return nil
    }
}
