import Foundation
import SightlinePipeline
import SightlineHTTP
import SightlineEvents

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

    /// Every camera's routes and the server's own in one table. The first
    /// camera answers the unprefixed routes, as when there was one camera;
    /// each camera answers its own under `/cam/NAME/` (streams, snapshot,
    /// metrics) and `/api/cameras/NAME/` (its API: `/api/state` is
    /// `/api/cameras/NAME/state`). `extra`: server-wide routes (`/api/cameras`).
    static func router(cameras: [(name: String, parts: Parts)], extra: [Route] = []) -> Router {
        let first = cameras[0].parts
        var routes = serverRoutes(first) + extra + cameraRoutes(first)
        for camera in cameras {
            routes += cameraRoutes(camera.parts).map { prefixed($0, camera: camera.name) }
        }
        routes += anyCaseRoutes(cameras)
        return Router(routes: routes, authorize: { request, access in first.auth.refusal(for: request, needs: access) },
                      fallback: { request in first.staticFiles.response(for: request.path) })
    }

    /// One camera's table, as the server had it with one camera.
    static func router(_ parts: Parts) -> Router {
        router(cameras: [(name: "camera", parts: parts)])
    }

    /// `route` under a camera's prefix: `/api/X` as `/api/cameras/NAME/X`, anything else `/cam/NAME/...`.
    static func prefixed(_ route: Route, camera: String) -> Route {
        let path = route.pattern.text
        let moved = path.hasPrefix("/api/") ? "/api/cameras/\(camera)/" + path.dropFirst("/api/".count) : "/cam/\(camera)" + path
        return Route(route.method, moved, access: route.access, route.execution, handler: route.handler)
    }

    /// After the cameras' own: each camera route with the name as a parameter,
    /// answered by the camera whose name is that ignoring case (`/cam/Front/...`
    /// is `/cam/front/...`), 404 when none is: names are compared one way
    /// everywhere (`CameraRoster.key`). One route per path, in the order first
    /// seen; the stream server finds a stream's camera ignoring case too
    /// (`CameraFeeds.feed(forPath:)`).
    static func anyCaseRoutes(_ cameras: [(name: String, parts: Parts)]) -> [Route] {
        var order: [String] = []
        var byPath: [String: (template: Route, handlers: [String: Route.Handler])] = [:]
        for camera in cameras {
            for route in cameraRoutes(camera.parts) {
                let template = prefixed(route, camera: "{camera}")
                let key = route.method.rawValue + " " + template.pattern.text
                if byPath[key] == nil {
                    order.append(key)
                    byPath[key] = (template, [:])
                }
                byPath[key]?.handlers[CameraRoster.key(camera.name)] = route.handler
            }
        }
        return order.compactMap { byPath[$0] }.map { entry in
            let handlers = entry.handlers
            return Route(entry.template.method, entry.template.pattern.text, access: entry.template.access,
                         entry.template.execution) { request in
                let name = request.parameters["camera"] ?? ""
                guard let handler = handlers[CameraRoster.key(name)] else {
                    return .error(404, "no such camera", detail: "'\(name)' is not among GET /api/cameras")
                }
                return handler(request)
            }
        }
    }

    /// The page, its ?action= forms (the first camera's) and signing in.
    static func serverRoutes(_ parts: Parts) -> [Route] {
        [
            // The page is open (it signs the browser in); its ?action= forms are the camera.
            Route(.get, "/", access: .anyone) { request in
                if request.query["action"] != nil, let refusal = parts.auth.refusal(for: request, needs: .viewer) {
                    return refusal
                }
                switch request.query["action"] {
                case nil: return parts.staticFiles.response(for: request.path)
                case "stream": return Self.stream()
                case "snapshot": return snapshotResponse(parts)
                default: return .error(400, "unknown action", detail: "use ?action=stream or ?action=snapshot")
                }
            },
        ] + SessionAPI(auth: parts.auth).routes
    }

    private static func snapshotResponse(_ parts: Parts) -> HTTPResponse {
        parts.live() ? Self.snapshot(parts.latestFrame())
            : .error(503, "no signal", detail: "the source delivers no frames now; see /api/state")
    }

    /// What belongs to one camera: its state, metrics, streams, snapshot, health and API.
    static func cameraRoutes(_ parts: Parts) -> [Route] {
        let snapshot: Route.Handler = { _ in snapshotResponse(parts) }
        let stream: Route.Handler = { _ in Self.stream() }
        var routes = [
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
        routes += parts.templates.routes + parts.sources.routes + (parts.faces?.routes ?? [])
        routes += parts.events?.routes ?? []
        routes += parts.recordings?.routes ?? []
        return routes
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
