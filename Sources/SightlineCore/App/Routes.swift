import Foundation

/// Maps requests to answers. Runs on the lws service thread, so every
/// handler here is quick and reads shared state through its locks.
struct Routes: Sendable {
    let state: @Sendable () -> ServerState
    let metrics: @Sendable () -> String
    let latestFrame: @Sendable () -> EncodedFrame?
    let staticFiles: StaticFiles
    /// Handlers that answer the paths they own and nil for the rest.
    let apis: [@Sendable (HTTPRequest) -> HTTPResponse?]

    func respond(to request: HTTPRequest) -> HTTPResponse {
        if request.method == .get, let action = request.query["action"], request.path == "/" {
            switch action {
            case "stream": return stream()
            case "snapshot": return snapshot()
            default: return .error(400, "unknown action", detail: "use ?action=stream or ?action=snapshot")
            }
        }
        switch (request.method, request.path) {
        case (.get, "/api/state"):
            return .json(state())
        case (.get, "/metrics"):
            return .text(metrics(), contentType: PrometheusText.contentType)
        case (.get, "/snapshot.jpg"):
            return snapshot()
        case (.get, "/stream.mjpg"):
            return stream()
        default:
            break
        }
        for api in apis {
            if let response = api(request) { return response }
        }
        if request.path.hasPrefix("/api/") {
            return .error(404, "no such endpoint", detail: "\(request.method.rawValue) \(request.path)")
        }
        guard request.method == .get || request.method == .head else {
            return .error(405, "method not allowed", detail: "static files answer GET only")
        }
        return staticFiles.response(for: request.path)
    }

    private func snapshot() -> HTTPResponse {
        guard let frame = latestFrame() else {
            return .error(503, "no frame yet", detail: "the source has not delivered a frame; see /api/state")
        }
        return .data(frame.jpeg, contentType: "image/jpeg",
                     headers: [("cache-control:", "no-store"), ("x-sequence:", "\(frame.seq)")])
    }

    private func stream() -> HTTPResponse {
        HTTPResponse(status: 200, contentType: MJPEG.contentType,
                     headers: [("cache-control:", "no-store"), ("pragma:", "no-cache")], body: .mjpegStream)
    }
}
