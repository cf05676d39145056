import Foundation
import Logging
import SightlineVision
import SightlineSupport
import SightlinePipeline
import SightlineHTTP
import SightlineStreaming
import SightlineEvents

/// The running server: its cameras (`CameraUnit`, one per configured
/// camera, each built by `CameraAssembly`), the libwebsockets server that
/// streams them and answers the API, and the access token. It owns these
/// parts from `init` to `stop()`; the parts run on their own threads and
/// guard their own state. The first camera answers the unprefixed routes
/// (`/ws`, `/api/state`, ...), every camera its own under `/cam/NAME/` and
/// `/api/cameras/NAME/`.
///
/// Threads: `init`, `start` and `stop` are called from the main thread.
public final class SightlineServer: Sendable {
    public let settings: ServeSettings
    public let tokens: TokenStore
    /// Every camera now (added and removed at runtime: `CameraRegistry`), the first being that of the unprefixed routes.
    public var cameras: [CameraUnit] { registry.units }
    private let registry: CameraRegistry
    private let server: StreamServer
    private let logger: Logger
    private let startedAt = MonotonicClock.nanos()
    /// One face detection thread, and each model loaded once, for every camera.
    public let faceSharing: FaceSharing
    /// One broker connection (per distinct broker configuration) for every camera.
    public let mqtt: MQTTConnections

    public init(settings: ServeSettings, logger: Logger, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        try settings.validate()
        self.settings = settings
        self.logger = logger
        do {
            try AtomicFile.makeDirectory(settings.dataDir)
        } catch let error as StorageError {
            throw ConfigError.invalid("cannot make the data directory \(settings.dataDir): \(error)")
        }
        // The config's cameras with what admins changed at runtime (<data-dir>/cameras.json) over them.
        let (saved, warning) = CameraRoster.load(dataDir: settings.dataDir)
        if let warning { logger.warning("\(warning)") }
        let resolved = try saved.resolve(top: settings)
        for note in resolved.notes { logger.warning("cameras: \(note)") }
        if resolved.roster != saved {
            do {
                try resolved.roster.save(dataDir: settings.dataDir)
            } catch {
                logger.warning("cannot save \(CameraRoster.fileName): \(error)")
            }
        }
        let cameraSettings = resolved.cameras
        let (tokens, generated) = try TokenStore.open(dataDir: settings.dataDir, environment: environment,
                                                      configured: settings.token, makeAdmin: true)
        self.tokens = tokens
        if let generated {
            logger.notice("made an admin token (shown once; also in the file, mode 0600)",
                          metadata: ["file": "\((settings.dataDir as NSString).appendingPathComponent("token"))",
                                     "token": "\(generated)"])
        }
        if settings.viewingIsOpen && !ServeSettings.isLoopback(settings.host) {
            logger.warning("viewing is open to anyone who can reach \(settings.host):\(settings.port) (access.view: open)")
        }
        let sharing = FaceSharing()
        faceSharing = sharing
        let connections = MQTTConnections(logger: logger)
        mqtt = connections
        var cameras: [CameraUnit] = []
        for own in cameraSettings {
            do {
                cameras.append(try CameraUnit(server: settings.server, settings: own, logger: logger, environment: environment,
                                              tagLogs: cameraSettings.count > 1, sharing: sharing,
                                              connections: connections))
            } catch where resolved.roster.isAdded(own.routeName) {
                // A camera added at runtime that cannot be made now (its data directory, say) stays in
                // cameras.json and out of this run; the config's cameras still start.
                logger.error("camera '\(own.routeName)' added at runtime cannot be made; leaving it out: \(error)")
            }
        }
        let tls = try Self.tlsFiles(settings: settings, logger: logger)
        let auth = AuthGuard(tokens: tokens, sessions: SessionStore(lifetime: settings.sessionMinutes * 60),
                             policy: AccessPolicy(settings: settings))
        let (server, streams) = Self.makeServer(settings: settings, cameras: cameras, auth: auth, tls: tls, logger: logger)
        self.server = server
        // Hands the server its route table (the cameras' and the admin routes) before it starts.
        registry = try CameraRegistry(top: settings, units: cameras, roster: resolved.roster, server: server, streams: streams, auth: auth,
                                      staticFiles: StaticFiles(root: ResourceLocator.locate(settings.webRoot)),
                                      sharing: sharing, connections: connections, startedAt: startedAt, logger: logger, environment: environment)
        for camera in cameras { camera.connect(to: server) }
    }

    public var port: Int { server.boundPort }

    public func start() throws {
        try server.start()
        mqtt.start()
        let cameras = cameras
        for camera in cameras { try camera.start(waking: server) }
        // Passwords in stream URLs never reach the log (or systemd's status line).
        let sources = cameras.map { cameras.count > 1 ? "\($0.name)=\(SourceSpec.logForm($0.settings.source))"
                                                      : SourceSpec.logForm($0.settings.source) }
            .joined(separator: " ")
        logger.info("serving", metadata: ["url": "\(settings.tlsEnabled ? "https" : "http")://\(settings.host):\(server.boundPort)/",
                                          "source": "\(sources)"])
        ServiceManager.ready(status: "serving \(sources) on \(settings.host):\(server.boundPort)")
    }

    public func stop() {
        ServiceManager.stopping()
        registry.close()
        for camera in cameras { camera.stop() }
        // After the cameras: their last events go out, then `offline`.
        mqtt.stop()
        faceSharing.stop()
        server.stop()
    }

    // MARK: - Assembly of the HTTP side

    static func state(camera: CameraGraph, startedAt: UInt64, parts: CameraUnit.StateParts) -> ServerState {
        let snapshot = camera.stats.snapshot()
        var state = ServerState(version: SightlineVersion.string, uptimeSeconds: uptime(since: startedAt),
                                status: camera.capture.status, stats: snapshot, templates: camera.templates.all,
                                faces: camera.facesInfo, sinks: camera.sinkCounts)
        state.video = parts.video.stats.snapshot(feed: parts.video.feed, webSocketClients: snapshot.webSocketClients)
        state.publish = parts.publishers.isEmpty ? nil : parts.publishers.map(\.snapshot)
        state.clips = parts.clips?.snapshot
        state.recording = parts.recorder?.snapshot
        return state
    }

    /// What `/metrics` reads of one camera now (its histograms are recorded live: `ServerMetrics`).
    static func metricsReading(_ unit: CameraUnit) -> CameraReading {
        let camera = unit.graph
        let parts = unit.parts
        let snapshot = camera.stats.snapshot()
        var reading = CameraReading(name: unit.name, stats: snapshot, status: camera.capture.status)
        reading.templates = camera.templates.all.count
        reading.sinks = camera.sinkCounts
        reading.video = parts.video.stats.snapshot(feed: parts.video.feed, webSocketClients: snapshot.webSocketClients)
        reading.publish = parts.publishers.map(\.snapshot)
        reading.events = unit.events?.status
        reading.recording = parts.recorder?.snapshot
        return reading
    }

    private static func uptime(since start: UInt64) -> Double { Double(MonotonicClock.nanos() - start) / 1e9 }

    /// The libwebsockets server and its routes, reading the camera's parts.
    /// The certificate to serve: PEM files given, or a self-signed one made
    /// (or kept) in <data-dir>/tls; nil for plain HTTP.
    static func tlsFiles(settings: ServeSettings, logger: Logger) throws -> TLSFiles? {
        var files: TLSFiles?
        if let cert = settings.tlsCert, let key = settings.tlsKey {
            files = TLSFiles(certificate: cert, privateKey: key)
        } else if settings.tlsAuto {
            let served = SelfSignedCertificate.servedNames(host: settings.host)
            let (made, fresh) = try SelfSignedCertificate.ensure(
                in: (settings.dataDir as NSString).appendingPathComponent("tls"), names: served.names, addresses: served.addresses)
            files = made
            if fresh { logger.notice("made a self-signed certificate", metadata: ["names": "\(served.names + served.addresses)"]) }
        }
        guard let files else { return nil }
        try files.validate()
        let fingerprint = try files.fingerprintSHA256()
        logger.notice("TLS on: compare this fingerprint with the one your browser shows",
                      metadata: ["sha256": "\(fingerprint)", "certificate": "\(files.certificate)"])
        return files
    }

    /// SIGHUP: new connections get the certificate files as they are now.
    public func reloadCertificate() {
        server.reloadCertificate()
    }

    /// The libwebsockets server streaming `cameras` (through the streams returned with it);
    /// its route table comes from the `CameraRegistry`.
    private static func makeServer(settings: ServeSettings, cameras: [CameraUnit], auth: AuthGuard, tls: TLSFiles?,
                                   logger: Logger) -> (StreamServer, CameraStreams) {
        var streaming = CameraStreams.Options()
        streaming.videoMaxLagSeconds = settings.video.maxLagSeconds
        streaming.videoLowAvailable = settings.video.lowEnabled
        let streams = CameraStreams(cameras: cameras.map(\.feed), options: streaming, logger: logger)
        var options = StreamServer.Options()
        options.host = settings.host
        options.port = settings.port
        options.tls = tls
        // An uploaded image is taken whole whatever its Content-Type says.
        options.isWholeFile = { ImageUpload.format(of: $0) != nil }
        // Checked when the settings were read.
        options.trustedProxies = (try? TrustedProxies(settings.trustedProxies)) ?? TrustedProxies()
        // Until the registry hands it the real table (before `start`): nothing but 503.
        let placeholder = Router(routes: [], authorize: { _, _ in nil },
                                 fallback: { _ in .error(503, "starting", detail: "the server is starting") })
        return (StreamServer(options: options, streams: streams, logger: logger, router: placeholder, access: auth), streams)
    }
}
