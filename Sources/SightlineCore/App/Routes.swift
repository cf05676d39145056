import Foundation

/// The whole route table in one place: every endpoint, who may call it and
/// where it runs (inline on the libwebsockets service thread only when it
/// answers from memory; on the RequestWorker when it decodes, encodes,
/// trains, probes devices or touches the disk).
enum Routes {
    struct Parts: Sendable {
        let state: @Sendable () -> ServerState
        let metrics: @Sendable () -> String
        let latestFrame: @Sendable () -> EncodedFrame?
        let staticFiles: StaticFiles
        let templates: TemplateAPI
        let sources: SourcesAPI
        let faces: FaceAPI?
        let auth: AuthGuard
        /// Whether the source delivers frames now.
        let live: @Sendable () -> Bool
        /// Events (nil with events.enabled false).
        var events: EventAPI? = nil
        /// Continuous recording (nil while record.enabled is false).
        var recordings: RecordingAPI? = nil
    }

    static func router(_ parts: Parts) -> Router {
        let snapshot: Route.Handler = { _ in
            parts.live() ? Self.snapshot(parts.latestFrame())
                : .error(503, "no signal", detail: "the source delivers no frames now; see /api/state")
        }
        let stream: Route.Handler = { _ in Self.stream() }
        var routes = [
            // The page is open (it signs the browser in); its ?action= forms are the camera.
            Route(.get, "/", access: .anyone) { request in
                if request.query["action"] != nil, let refusal = parts.auth.refusal(for: request, needs: .viewer) {
                    return refusal
                }
                switch request.query["action"] {
                case nil: return parts.staticFiles.response(for: request.path)
                case "stream": return stream(request)
                case "snapshot": return snapshot(request)
                default: return .error(400, "unknown action", detail: "use ?action=stream or ?action=snapshot")
                }
            },
            // Admins get the source's full spec; viewers its public form (no server paths).
            Route(.get, "/api/state", access: .viewer) { request in
                let state = parts.state()
                return .json(isAdmin(parts.auth, request) ? state : state.forViewer())
            },
            Route(.get, "/metrics", access: .viewer) { _ in .text(parts.metrics(), contentType: PrometheusText.contentType) },
            Route(.get, "/snapshot.jpg", access: .viewer, handler: snapshot),
            // For supervisors: 200 while frames flow, 503 otherwise. Says nothing else, so it is open.
            Route(.get, "/healthz", access: .anyone) { _ in
                parts.live() && parts.latestFrame() != nil
                    ? .text("live\n") : .error(503, "no signal", detail: "the source delivers no frames now")
            },
            Route(.get, "/stream.mjpg", access: .viewer, handler: stream),
        ]
        routes += SessionAPI(auth: parts.auth).routes
        routes += parts.templates.routes + parts.sources.routes + (parts.faces?.routes ?? [])
        routes += parts.events?.routes ?? []
        routes += parts.recordings?.routes ?? []
        return Router(routes: routes, authorize: { request, access in parts.auth.refusal(for: request, needs: access) },
                      fallback: { request in parts.staticFiles.response(for: request.path) })
    }

    /// Whether the request presents an admin credential (the role, not the route's access).
    static func isAdmin(_ auth: AuthGuard, _ request: HTTPRequest) -> Bool {
        auth.credential(for: request).credential?.role == .admin
    }

    static func snapshot(_ frame: EncodedFrame?) -> HTTPResponse {
        guard let frame else {
            return .error(503, "no frame yet", detail: "the source has not delivered a frame; see /api/state")
        }
        return .data(frame.jpeg, contentType: "image/jpeg",
                     headers: [("cache-control:", "no-store"), ("x-sequence:", "\(frame.seq)")])
    }

    static func stream() -> HTTPResponse {
        HTTPResponse(status: 200, contentType: MJPEG.contentType,
                     headers: [("cache-control:", "no-store"), ("pragma:", "no-cache")], body: .mjpegStream)
    }
}
