import Foundation
import SightlineSupport
import Synchronization

/// Who may call a route.
public enum Access: Sendable, Equatable {
    /// Anyone at all, even where viewing needs a credential: signing in, and
    /// the health check supervisors read.
    case anyone
    /// Anyone who may view (the page, streams, state, lists).
    case viewer
    /// Only an admin credential (everything that changes something).
    case admin
}

/// Where a route's handler runs.
public enum Execution: Sendable, Equatable {
    /// On the libwebsockets service thread: only for handlers that answer in
    /// microseconds from memory (state, lists, the newest frame).
    case inline
    /// On the `RequestWorker`: anything that decodes, encodes, trains, probes
    /// devices or touches the disk. The connection waits; everyone else is served.
    case worker
}

/// One entry of the route table: method and path pattern, who may call it,
/// where it runs, and what answers it.
public struct Route: Sendable {
    public typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse
    /// A worker route's answer when memory has it (on the service thread, in
    /// microseconds), or nil when the handler must run on the worker.
    public typealias InlineAnswer = @Sendable (HTTPRequest) -> HTTPResponse?

    public let method: HTTPRequest.Method
    public let pattern: PathPattern
    public let access: Access
    public let execution: Execution
    public let handler: Handler
    /// `.worker` routes: the answer that needs no worker, when there is one (nil: always the worker).
    public let inlineAnswer: InlineAnswer?

    public init(_ method: HTTPRequest.Method, _ pattern: String, access: Access, _ execution: Execution = .inline,
                inlineAnswer: InlineAnswer? = nil, handler: @escaping Handler) {
        self.method = method
        self.pattern = PathPattern(pattern)
        self.access = access
        self.execution = execution
        self.inlineAnswer = inlineAnswer
        self.handler = handler
    }
}

/// A path with `{name}` segments, e.g. `/api/faces/{id}/name`; a segment
/// `{name}.png` captures what comes before the suffix. Captured segments
/// are percent-decoded.
public struct PathPattern: Sendable, Equatable {
    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String, suffix: String)
    }

    let segments: [Segment]
    public let text: String

    public init(_ text: String) {
        self.text = text
        segments = text.split(separator: "/", omittingEmptySubsequences: true).map { part in
            guard part.hasPrefix("{"), let close = part.firstIndex(of: "}") else { return .literal(String(part)) }
            let name = String(part[part.index(after: part.startIndex)..<close])
            return .parameter(name, suffix: String(part[part.index(after: close)...]))
        }
    }

    /// The parameters when `path` matches, else nil.
    public func match(_ path: String) -> [String: String]? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        let trimmed = parts.last == "" && parts.count > 1 ? Array(parts.dropLast()) : Array(parts)
        if segments.isEmpty { return trimmed.allSatisfy(\.isEmpty) ? [:] : nil }
        guard trimmed.count == segments.count else { return nil }
        var parameters: [String: String] = [:]
        for (segment, part) in zip(segments, trimmed) {
            switch segment {
            case .literal(let literal):
                guard part == literal else { return nil }
            case .parameter(let name, let suffix):
                guard part.count > suffix.count, part.hasSuffix(suffix) else { return nil }
                let raw = String(part.dropLast(suffix.count))
                guard let decoded = raw.removingPercentEncoding, !decoded.isEmpty else { return nil }
                parameters[name] = decoded
            }
        }
        return parameters
    }
}

/// The one route table: finds the route for a request, checks who may call
/// it, and says where it runs. Paths under `/api/` that match nothing are
/// 404, a known path with another method 405 (with `Allow`), and everything
/// else goes to `fallback` (the static files).
public struct Router: Sendable {
    public enum Decision: Sendable {
        /// Answer now (an error, a refusal, or an inline handler's answer).
        case respond(HTTPResponse)
        /// Run `handler` with `request` on the worker, then answer.
        case work(HTTPRequest, Route.Handler)
    }

    public let routes: [Route]
    /// nil when the request may go on with that access; else the refusal.
    public typealias Authorizer = @Sendable (HTTPRequest, Access) -> HTTPResponse?
    private let authorize: Authorizer
    private let fallback: @Sendable (HTTPRequest) -> HTTPResponse

    public init(routes: [Route], authorize: @escaping Authorizer,
                fallback: @escaping @Sendable (HTTPRequest) -> HTTPResponse = { request in
                    .error(404, "no such endpoint", detail: "\(request.method.rawValue) \(request.path)")
                }) {
        self.routes = routes
        self.authorize = authorize
        self.fallback = fallback
    }

    /// What to do with a request (service thread; cheap: matching and the credential check).
    public func decide(_ request: HTTPRequest) -> Decision {
        switch find(request) {
        case .answered(let answer):
            return .respond(answer)
        case .route(let route, let parameters):
            if let refusal = authorize(request, route.access) { return .respond(refusal) }
            var matched = request
            matched.parameters = parameters
            switch route.execution {
            case .inline: return .respond(route.handler(matched))
            case .worker:
                if let answer = route.inlineAnswer?(matched) { return .respond(answer) }
                return .work(matched, route.handler)
            }
        }
    }

    /// The answer a request gets from its headers alone, before any of its
    /// body is read (service thread): no such route, the wrong method, or a
    /// caller who may not call it (401, 403, 429, a foreign Origin). nil when
    /// the body is worth reading. `decide` checks the same again once the body
    /// is in, so a credential revoked meanwhile still counts.
    public func refusalBeforeBody(_ request: HTTPRequest) -> HTTPResponse? {
        switch find(request) {
        case .answered(let answer): return answer
        case .route(let route, _): return authorize(request, route.access)
        }
    }

    private enum Found {
        case route(Route, parameters: [String: String])
        case answered(HTTPResponse)
    }

    /// The route for a request's method and path, or the answer when there is none
    /// (404, 405 with `Allow`, or the static files for a GET elsewhere).
    private func find(_ request: HTTPRequest) -> Found {
        var allowed: [HTTPRequest.Method] = []
        for route in routes {
            guard let parameters = route.pattern.match(request.path) else { continue }
            let method = request.method == .head && route.method == .get ? .get : request.method
            guard route.method == method else {
                allowed.append(route.method)
                continue
            }
            return .route(route, parameters: parameters)
        }
        if !allowed.isEmpty {
            var names = allowed.map(\.rawValue)
            if names.contains("GET") { names.append("HEAD") }
            let allow = Array(Set(names)).sorted().joined(separator: ", ")
            var response = HTTPResponse.error(405, "method not allowed", detail: "\(request.path) answers \(allow)")
            response.headers.append(("allow:", allow))
            return .answered(response)
        }
        if request.path == "/api" || request.path.hasPrefix("/api/") {
            return .answered(.error(404, "no such endpoint", detail: "\(request.method.rawValue) \(request.path)"))
        }
        // The page's own files hold no camera data: anyone may load them, so a
        // browser that is not signed in gets the page and its sign-in.
        guard request.method == .get || request.method == .head else {
            return .answered(.error(405, "method not allowed", detail: "static files answer GET only"))
        }
        return .answered(fallback(request))
    }

    /// The answer, running a worker route on the calling thread (tests, tools).
    public func respond(to request: HTTPRequest) -> HTTPResponse {
        switch decide(request) {
        case .respond(let response): return response
        case .work(let matched, let handler): return handler(matched)
        }
    }
}

/// The route table in use, which the server's owner may replace while it
/// serves (cameras added or removed at runtime): each request is decided by
/// the table as it is when its headers (and again its body) are in.
///
/// Threads: read on the service thread, replaced from any thread; the table is in a `Mutex`.
public final class RouteTable: Sendable {
    private let table: Locked<Router>

    public init(_ router: Router) {
        table = Locked(router)
    }

    /// The table now (a copy: its routes are an array of values).
    public var current: Router { table.withLock { $0 } }

    /// Any thread: requests decided from now on use `router`.
    public func replace(with router: Router) {
        table.withLock { $0 = router }
    }
}
