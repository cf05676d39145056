import Foundation
import Logging
import Synchronization
import SightlineHTTP
import SightlineStreaming
import SightlinePipeline
import SightlineVision
import SightlineSupport
import SightlineEvents

/// The server's cameras while it runs: the config's, less those removed at
/// runtime, plus those added (`CameraRoster`, `<data-dir>/cameras.json`).
/// Adds a camera (`POST /api/cameras`), removes one (`DELETE
/// /api/cameras/NAME`) and switches a camera's source (`POST
/// /api/cameras/NAME/source`), each saved before it takes effect; and keeps
/// the stream server's route table and camera feeds in step.
///
/// Threads: changes run on the request worker (the admin routes are
/// `.worker`), one at a time under `changes`, which is held while a camera is
/// made, started or stopped (seconds) and taken by nothing else; the
/// libwebsockets service thread only reads `entries` (its own short lock)
/// and the route table the server holds. The first camera is never removed.
final class CameraRegistry: Sendable {
    /// A camera and what its routes read.
    struct Entry: Sendable {
        let unit: CameraUnit
        let parts: Routes.Parts
    }

    private struct Changes {
        var roster: CameraRoster
        /// The server is stopping: no more changes.
        var closed = false
    }

    private let entries = Locked<[Entry]>([])
    private let changes: Locked<Changes>
    /// The server's settings (config and flags): added cameras' are these with their own over them.
    private let top: ServeSettings
    /// The config's cameras' sources, by name (the roster keeps a switched one with the config's).
    private let configured: [ConfiguredCamera]
    private let server: StreamServer
    /// What the server streams of each camera (`/ws`, MJPEG).
    private let streams: CameraStreams
    private let auth: AuthGuard
    private let staticFiles: StaticFiles
    private let sharing: FaceSharing
    private let connections: MQTTConnections
    private let startedAt: UInt64
    /// `/metrics`: the server's figures and every camera's histograms (attached before a camera starts).
    private let metrics: ServerMetrics
    private let logger: Logger
    private let environment: [String: String]

    /// `units`: made from `roster.resolve(top:)`, not started; `roster`: the resolved roster (saved).
    init(top: ServeSettings, units: [CameraUnit], roster: CameraRoster, server: StreamServer, streams: CameraStreams, auth: AuthGuard,
         staticFiles: StaticFiles, sharing: FaceSharing, connections: MQTTConnections, startedAt: UInt64, logger: Logger,
         environment: [String: String]) throws {
        self.top = top
        configured = try top.cameraSettings()
        changes = Locked(Changes(roster: roster))
        self.server = server
        self.streams = streams
        self.auth = auth
        self.staticFiles = staticFiles
        self.sharing = sharing
        self.connections = connections
        self.startedAt = startedAt
        metrics = ServerMetrics(server: server.stats, startedAt: startedAt)
        self.logger = logger
        self.environment = environment
        for unit in units { metrics.attach(camera: unit.name, stats: unit.graph.stats, video: unit.videoStats) }
        let made = units.map { Entry(unit: $0, parts: routeParts($0)) }
        entries.withLock { $0 = made }
        publishRoutes()
    }

    /// Every camera now, the first (the unprefixed routes') first.
    var units: [CameraUnit] { entries.withLock { $0.map(\.unit) } }

    /// Main thread, at stop: waits for a change under way; none after this.
    func close() {
        changes.withLock { $0.closed = true }
    }

    // MARK: - Routes

    /// The route table for the cameras now, handed to the server.
    /// Called in `init` and under `changes`, so tables are published in order.
    private func publishRoutes() {
        let now = entries.withLock { $0 }
        let listing = CamerasAPI(cameras: { [weak self] in self?.units ?? [] }, sharing: sharing,
                                 isAdmin: { [auth] request in Routes.isAdmin(auth, request) })
        let units = now.map(\.unit)
        let router = Routes.router(cameras: now.map { (name: $0.unit.name, parts: $0.parts) },
                                   extra: listing.routes + adminRoutes,
                                   metrics: { [metrics] in metrics.page(units.map(SightlineServer.metricsReading)) })
        server.replaceRoutes(with: router)
    }

    private var adminRoutes: [Route] {
        [
            Route(.post, "/api/cameras", access: .admin, .worker) { [weak self] request in
                self?.add(request.body) ?? Self.stopping
            },
            Route(.delete, "/api/cameras/{name}", access: .admin, .worker) { [weak self] request in
                guard let self else { return Self.stopping }
                return remove(canonicalName(request.parameters["name"] ?? ""))
            },
        ]
    }

    private static let stopping = HTTPResponse.error(503, "stopping", detail: "the server is stopping")

    /// `name` as the camera (running, or added but left out at start) spells
    /// it, names being compared ignoring case (`CameraRoster.key`); `name` when there is none.
    private func canonicalName(_ name: String) -> String {
        if let unit = units.first(where: { CameraRoster.key($0.name) == CameraRoster.key(name) }) { return unit.name }
        return changes.withLock { state in
            state.roster.added.first { CameraRoster.key($0.name) == CameraRoster.key(name) }?.name ?? name
        }
    }

    /// What an admin may name as a source at runtime, adding or switching alike.
    private var sourcePolicy: SourcePolicy { SourcePolicy(settings: top, port: server.boundPort) }

    // MARK: - Adding

    private struct AddBody: Decodable {
        var name: String
        var source: String
        var camera: String?
        var faces: Bool?
        static let keys: Set<String> = ["name", "source", "camera", "faces"]
    }

    /// Request worker: `POST /api/cameras`.
    func add(_ body: Data) -> HTTPResponse {
        let usage = "send {\"name\": \"yard\", \"source\": \"file:/path/video.mp4\"} (optional: \"camera\", its name "
            + "in events and MQTT; \"faces\": true or false)"
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any] else {
            return .error(400, "bad body", detail: "not a JSON object; " + usage)
        }
        let unknown = Set(object.keys).subtracting(AddBody.keys)
        guard unknown.isEmpty else {
            return .error(400, "bad body", detail: "unknown key(s) \(unknown.sorted().joined(separator: ", ")); " + usage)
        }
        guard let request = try? JSONDecoder().decode(AddBody.self, from: body) else {
            return .error(400, "bad body", detail: "name and source must be strings, camera a string, faces true or false; " + usage)
        }
        if let problem = ServeSettings.cameraNameProblem(request.name) {
            return .error(400, "invalid name", detail: problem)
        }
        // The rules switching a source follows too (files under media folders, capture devices only, not this server).
        if let refusal = sourcePolicy.refusal(request.source) {
            return .error(400, refusal.error, detail: refusal.detail)
        }
        return changes.withLock { state -> HTTPResponse in
            guard !state.closed else { return Self.stopping }
            if let existing = units.first(where: { CameraRoster.key($0.name) == CameraRoster.key(request.name) }) {
                return .error(409, "camera exists", detail: "a camera named '\(existing.name)' exists (names are compared ignoring case)")
            }
            // A config camera removed before comes back with the config's settings and this source.
            let fromConfig = configured.first { CameraRoster.key($0.routeName) == CameraRoster.key(request.name) }
            if fromConfig != nil && (request.camera != nil || request.faces != nil) {
                return .error(400, "camera is in the config", detail: "'\(request.name)' is a camera of the config file, "
                              + "whose settings come from there: send only its name and source")
            }
            let entry = CameraRoster.Added(name: fromConfig?.routeName ?? request.name, source: request.source,
                                           camera: request.camera, faces: request.faces)
            let settings: ConfiguredCamera
            do {
                if var own = fromConfig {
                    own.source = request.source
                    settings = own
                } else {
                    settings = try top.addedCameraSettings(entry)
                }
            } catch {
                return .error(400, "bad camera", detail: "\(error)")
            }
            let unit: CameraUnit
            do {
                unit = try CameraUnit(server: top.server, settings: settings, logger: logger, environment: environment, tagLogs: true,
                                      sharing: sharing, connections: connections)
            } catch {
                return .error(422, "cannot make the camera", detail: "\(error)")
            }
            var roster = state.roster
            roster.add(entry, configSource: fromConfig?.source)
            if let refusal = save(roster, action: "cannot save the camera") {
                unit.stop()
                return refusal
            }
            unit.connect(to: server)
            metrics.attach(camera: unit.name, stats: unit.graph.stats, video: unit.videoStats)
            do {
                try unit.start(waking: server)
            } catch {
                unit.stop()
                metrics.detach(camera: unit.name, stats: unit.graph.stats, video: unit.videoStats)
                unit.leaveMQTT(clear: false)
                _ = save(state.roster, action: "cannot restore the cameras' file")
                return .error(422, "cannot start the camera", detail: "\(error)")
            }
            state.roster = roster
            streams.add(unit.feed)
            let made = Entry(unit: unit, parts: routeParts(unit))
            entries.withLock { $0.append(made) }
            publishRoutes()
            logger.notice("camera added", metadata: ["camera": "\(unit.name)", "source": "\(SourceSpec.logForm(settings.source))"])
            // Its entry as GET /api/cameras shows it now (its face share among every camera's).
            let listing = CamerasAPI(cameras: { [weak self] in self?.units ?? [unit] }, sharing: sharing,
                                     isAdmin: { _ in true }).listing(admin: true)
            guard let summary = listing.cameras.first(where: { $0.name == unit.name }) else {
                return .error(500, "camera not listed", detail: "'\(unit.name)' was added but is not listed")
            }
            return .json(summary, status: 201)
        }
    }

    // MARK: - Removing

    /// Request worker: `DELETE /api/cameras/NAME`: saved, then out of the
    /// routes and feeds (its viewers closed), then stopped (capture, pipeline,
    /// face lane, sinks with events, clips and MQTT, recording), and off the
    /// shared broker connection with its retained topics cleared. Its data
    /// directory stays.
    func remove(_ name: String) -> HTTPResponse {
        let answer = changes.withLock { state -> HTTPResponse in
            guard !state.closed else { return Self.stopping }
            let now = entries.withLock { $0 }
            guard let index = now.firstIndex(where: { $0.unit.name == name }) else {
                // Added at runtime, but left out at start (it could not be made): forgotten.
                if state.roster.isAdded(name) {
                    var roster = state.roster
                    roster.remove(name)
                    if let refusal = save(roster, action: "cannot save the removal") { return refusal }
                    state.roster = roster
                    return .json(["removed": name])
                }
                return .error(404, "no such camera", detail: "'\(name)' is not among GET /api/cameras")
            }
            guard index > 0 else {
                return .error(409, "the first camera stays", detail: "'\(name)' serves the unprefixed routes (/ws, /api/state, ...) "
                              + "and cannot be removed at runtime; remove it from the config file, or put another camera first there")
            }
            var roster = state.roster
            roster.remove(name)
            if let refusal = save(roster, action: "cannot save the removal") { return refusal }
            state.roster = roster
            let unit = now[index].unit
            entries.withLock { $0.removeAll { $0.unit === unit } }
            publishRoutes()
            // Its histograms out of /metrics with the rest of its series.
            metrics.detach(camera: unit.name, stats: unit.graph.stats, video: unit.videoStats)
            // Its viewers are closed at the server's next wake-up, now.
            if streams.remove(named: name) { server.wake() }
            unit.stop()
            // Off the shared connection: its last events go out, its retained counts,
            // snapshots and discovery configs are cleared (a camera that is gone shows nothing).
            unit.leaveMQTT(clear: true)
            logger.notice("camera removed (its data directory is kept)", metadata: ["camera": "\(name)"])
            return .json(["removed": name])
        }
        // The camera is freed once the last of its routes' closures is let go
        // (the route table this request came through holds them until the answer
        // is out): the pages its frames, encoders and buffers held then go back
        // to the system, rather than stay in malloc's arenas for the next
        // allocation. Now, and again a moment later for what was still held.
        MallocArenas.returnFreedPages()
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + 1) { MallocArenas.returnFreedPages() }
        return answer
    }

    // MARK: - Switching a source

    /// Request worker (`SourcesAPI`): camera `name`'s source to `spec`, saved
    /// first; when the source cannot be made the saved roster goes back.
    func switchSource(of name: String, to spec: String) throws {
        try changes.withLock { state in
            guard let unit = units.first(where: { $0.name == name }) else {
                throw ConfigError.invalid("camera '\(name)' was removed")
            }
            var roster = state.roster
            let configSource = roster.isAdded(name) ? nil : configured.first { $0.routeName == name }?.source
            roster.switchSource(of: name, to: spec, configSource: configSource)
            do {
                try roster.save(dataDir: top.dataDir)
            } catch let error as StorageError {
                throw ConfigError.invalid(error.message("cannot save the new source"))
            }
            do {
                try unit.graph.switchSource(to: spec)
            } catch {
                _ = save(state.roster, action: "cannot restore the cameras' file")
                throw error
            }
            state.roster = roster
        }
    }

    /// Writes `roster`; nil when it is saved, else the answer (507 for a full disk, 500 otherwise).
    private func save(_ roster: CameraRoster, action: String) -> HTTPResponse? {
        do {
            try roster.save(dataDir: top.dataDir)
            return nil
        } catch let error as StorageError {
            logger.error("\(action): \(error)")
            return .error(error.httpStatus, action, detail: "\(error); \(error.reason.hint)")
        } catch {
            logger.error("\(action): \(error)")
            return .error(500, action, detail: "\(error)")
        }
    }

    // MARK: - One camera's routes

    /// Naming from face events uses a second detector of the same kind, made on first use.
    private static func eventNamer(_ events: EventServices?, _ camera: CameraGraph, _ settings: ConfiguredCamera,
                                   _ logger: Logger) -> EventNamer? {
        guard let events, let faces = camera.faceService else { return nil }
        return EventNamer(store: events.store, faces: faces) {
            try FaceDetectorFactory.make(modelPath: settings.faceModel, logger: logger)
        }
    }

    /// One camera's routes' parts: what its handlers read and change.
    private func routeParts(_ unit: CameraUnit) -> Routes.Parts {
        let camera = unit.graph
        let settings = unit.settings
        let capture = camera.capture
        let parts = unit.parts
        let stream = unit.stream
        let events = unit.events
        let startedAt = startedAt
        let name = unit.name
        let recordings = unit.recorder.map { RecordingAPI(recorder: $0) }
        let templates = TemplateAPI(library: camera.templates, store: camera.templateStore,
                                    uploadedNames: camera.uploadedTemplateNames,
                                    defaultThreshold: settings.templateThreshold,
                                    frameSize: { capture.status.format.map { ($0.width, $0.height) } },
                                    storageFailures: StorageFailureReporter(stats: camera.stats, logger: logger))
        let sources = SourcesAPI(configured: settings.offeredSources, current: { capture.status.spec },
                                 switchTo: { [weak self] spec in
                                     guard let self else { throw ConfigError.invalid("the server is stopping") }
                                     try self.switchSource(of: name, to: spec)
                                 },
                                 isAdmin: { [auth] request in Routes.isAdmin(auth, request) },
                                 admits: { [weak self] spec, offered in
                                     guard let self else { return SourcePolicy.Refusal(error: "stopping", detail: "the server is stopping") }
                                     return self.sourcePolicy.refusal(spec, offered: offered)
                                 })
        let eventAPI = events?.api(namer: Self.eventNamer(events, camera, settings, logger), recordings: recordings)
        return Routes.Parts(
            state: { SightlineServer.state(camera: camera, startedAt: startedAt, parts: parts) },
            metrics: { [metrics] in metrics.page(camera: SightlineServer.metricsReading(unit)) },
            latestFrame: { stream.slot.latest },
            staticFiles: staticFiles,
            templates: templates, sources: sources, faces: camera.faceService.map { FaceAPI(service: $0) },
            auth: auth,
            live: { capture.status.state == .live }, events: eventAPI, recordings: recordings)
    }
}
