import Foundation
import SightlinePipeline
import SightlineHTTP
import SightlineStreaming
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
    /// `metrics`: the unprefixed `/metrics`, every camera's (nil: the first camera's, as `/cam/NAME/metrics`).
    static func router(cameras: [(name: String, parts: Parts)], extra: [Route] = [],
                       metrics: (@Sendable () -> String)? = nil) -> Router {
        let first = cameras[0].parts
        let firstRoutes = cameraRoutes(first).map { route in
            guard let metrics, route.method == .get, route.pattern.text == "/metrics" else { return route }
            return Route(.get, "/metrics", access: route.access, route.execution) { _ in
                .text(metrics(), contentType: PrometheusText.contentType)
            }
        }
        var routes = serverRoutes(first) + extra + firstRoutes
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
        return Route(route.method, moved, access: route.access, route.execution, inlineAnswer: route.inlineAnswer,
                     handler: route.handler)
    }

    /// After the cameras' own: each camera route with the name as a parameter,
    /// answered by the camera whose name is that ignoring case (`/cam/Front/...`
    /// is `/cam/front/...`), 404 when none is: names are compared one way
    /// everywhere (`CameraRoster.key`). One route per path, in the order first
    /// seen; the stream server finds a stream's camera ignoring case too
    /// (`CameraFeeds.feed(forPath:)`).
    static func anyCaseRoutes(_ cameras: [(name: String, parts: Parts)]) -> [Route] {
        var order: [String] = []
        var byPath: [String: (template: Route, handlers: [String: Route])] = [:]
        for camera in cameras {
            for route in cameraRoutes(camera.parts) {
                let template = prefixed(route, camera: "{camera}")
                let key = route.method.rawValue + " " + template.pattern.text
                if byPath[key] == nil {
                    order.append(key)
                    byPath[key] = (template, [:])
                }
                byPath[key]?.handlers[CameraRoster.key(camera.name)] = route
            }
        }
        return order.compactMap { byPath[$0] }.map { entry in
            let routes: [String: Route] = entry.handlers
            var inline: Route.InlineAnswer?
            if routes.values.contains(where: { $0.inlineAnswer != nil }) {
                inline = { request -> HTTPResponse? in
                    guard let route = routes[CameraRoster.key(request.parameters["camera"] ?? "")] else { return nil }
                    return route.inlineAnswer?(request)
                }
            }
            return Route(entry.template.method, entry.template.pattern.text, access: entry.template.access,
                         entry.template.execution, inlineAnswer: inline) { request in
                let name = request.parameters["camera"] ?? ""
                guard let route = routes[CameraRoster.key(name)] else {
                    return .error(404, "no such camera", detail: "'\(name)' is not among GET /api/cameras")
                }
                return route.handler(request)
            }
        }
    }

    /// The page, its ?action= forms (the first camera's) and signing in.
    static func serverRoutes(_ parts: Parts) -> [Route] {
        [
            // The page is open (it signs the browser in); its ?action= forms are the camera. Answered
            // inline but for a snapshot whose JPEG nobody has made yet, which the worker encodes.
            Route(.get, "/", access: .anyone, .worker, inlineAnswer: { request in page(request, parts, encode: false) }) { request in
                page(request, parts, encode: true) ?? .error(500, "no answer")
            },
        ] + SessionAPI(auth: parts.auth).routes
    }

    /// `/` and its ?action= forms; nil for a snapshot that needs encoding when `encode` is false.
    private static func page(_ request: HTTPRequest, _ parts: Parts, encode: Bool) -> HTTPResponse? {
        if request.query["action"] != nil, let refusal = parts.auth.refusal(for: request, needs: .viewer) {
            return refusal
        }
        switch request.query["action"] {
        case nil: return parts.staticFiles.response(for: request.path)
        case "stream": return Self.stream(request)
        case "snapshot": return snapshotResponse(request, parts, encode: encode)
        default: return .error(400, "unknown action", detail: "use ?action=stream or ?action=snapshot")
        }
    }

    /// The newest frame's JPEG at the size asked for (`?full=1`: the full
    /// picture). nil when it must be encoded and `encode` is false (the
    /// service thread asks so; the worker then encodes it, once for everyone).
    private static func snapshotResponse(_ request: HTTPRequest, _ parts: Parts, encode: Bool) -> HTTPResponse? {
        guard parts.live() else { return .error(503, "no signal", detail: "the source delivers no frames now; see /api/state") }
        return Self.snapshot(parts.latestFrame(), size: JPEGSize(query: request.query), encode: encode)
    }

    /// What belongs to one camera: its state, metrics, streams, snapshot, health and API.
    static func cameraRoutes(_ parts: Parts) -> [Route] {
        let stream: Route.Handler = { request in Self.stream(request) }
        var routes = [
            // Admins get the source's full spec; viewers its public form (no server paths).
            Route(.get, "/api/state", access: .viewer) { request in
                let state = parts.state()
                return .json(isAdmin(parts.auth, request) ? state : state.forViewer())
            },
            Route(.get, "/metrics", access: .viewer) { _ in .text(parts.metrics(), contentType: PrometheusText.contentType) },
            // Inline when the JPEG is made (someone watches it); encoded on the worker when nobody did.
            Route(.get, "/snapshot.jpg", access: .viewer, .worker,
                  inlineAnswer: { request in snapshotResponse(request, parts, encode: false) }) { request in
                snapshotResponse(request, parts, encode: true) ?? .error(500, "no answer")
            },
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

    /// `frame`'s JPEG at `size`: the one made, else (with `encode`; the
    /// worker) made now from its pixels, else nil.
    static func snapshot(_ frame: EncodedFrame?, size: JPEGSize = .stream, encode: Bool = true) -> HTTPResponse? {
        guard let frame else {
            return .error(503, "no frame yet", detail: "the source has not delivered a frame; see /api/state")
        }
        let jpeg: Data
        if let made = frame.jpeg.made(size) {
            jpeg = made
        } else if encode {
            do {
                jpeg = try frame.jpeg.make(size)
            } catch {
                return .error(500, "cannot encode the snapshot", detail: "\(error)")
            }
        } else {
            return nil
        }
        return .data(jpeg, contentType: "image/jpeg",
                     headers: [("cache-control:", "no-store"), ("x-sequence:", "\(frame.seq)")])
    }

    /// `/stream.mjpg` (`?full=1`: of the full picture).
    static func stream(_ request: HTTPRequest) -> HTTPResponse {
        HTTPResponse(status: 200, contentType: MJPEG.contentType,
                     headers: [("cache-control:", "no-store"), ("pragma:", "no-cache")],
                     body: .stream(JPEGSize(query: request.query)))
    }
}
