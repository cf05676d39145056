import Foundation
import Logging

/// The running server: one camera's graph (built by `CameraAssembly`), the
/// libwebsockets server that streams it and answers the API, and the access
/// token. It owns these parts from `init` to `stop()`; the parts run on
/// their own threads and guard their own state.
///
/// Threads: `init`, `start` and `stop` are called from the main thread.
public final class SightlineServer: Sendable {
    public let settings: ServeSettings
    public let tokens: TokenStore
    public let camera: CameraGraph
    private let stream: StreamSink
    /// Encodes H.264 for `/ws?video=h264` viewers (nil: video.h264 off).
    private let h264: H264Sink?
    private let videoStats: VideoStats
    /// One per `publish:` target (none without).
    public let publishers: [Publisher]
    private let server: StreamServer
    private let logger: Logger
    /// Events, snapshots, clips and MQTT; nil with events.enabled false.
    public let events: EventServices?
    /// Continuous recording; nil while record.enabled is false (or without H.264).
    public let recorder: SegmentRecorder?
    private let startedAt = MonotonicClock.nanos()
    private let parts: StateParts

    public init(settings: ServeSettings, logger: Logger, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        let assembly = try CameraAssembly(settings: settings, logger: logger)
        self.settings = settings
        self.logger = logger
        do {
            try AtomicFile.makeDirectory(settings.dataDir)
        } catch let error as StorageError {
            throw ConfigError.invalid("cannot make the data directory \(settings.dataDir): \(error)")
        }
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
        let stats = PipelineStats()
        let videoStats = VideoStats()
        let stream = StreamSink(stats: stats, videoStats: videoStats)
        // The source's rate, for the encoder's keyframe interval and rate control; read when an encoder is made.
        let sourceRate = LockedCallback<Void, Double>()
        let h264 = settings.video.h264Enabled
            ? H264Sink(settings: settings.video, stats: videoStats,
                       sourceFPS: { sourceRate() ?? settings.cameraFPS }, relaysUp: { stats.hasRelaysUp }, logger: logger)
            : nil
        let events = settings.events.enabled
            ? try EventServices(settings: settings, stats: stats, feed: h264?.feed, logger: logger) : nil
        let watchdog = WatchdogSink()
        let camera = try assembly.build(stats: stats, sinks: [stream] + (h264.map { [$0] } ?? []) + [watchdog]
                                            + (events.map { [$0.sink] } ?? []))
        let capture = camera.capture
        sourceRate.setAction { capture.status.format?.fps ?? settings.cameraFPS }
        self.h264 = h264
        self.videoStats = videoStats
        let targets = try settings.publish.map { try PublishTarget.parse($0, environment: environment) }
        publishers = h264.map { sink in
            targets.map { Publisher(target: $0, feed: sink.feed, logger: logger, watching: { stats.publishTarget(up: $0) }) }
        } ?? []
        let publishers = self.publishers
        events?.watch(templates: camera.templates, faces: camera.faceService)
        self.events = events
        recorder = try Self.segmentRecorder(settings: settings, feed: h264?.feed, logger: logger)
        let recordings = recorder.map { RecordingAPI(recorder: $0) }
        let parts = StateParts(video: (h264?.feed, videoStats), publishers: publishers, clips: events?.sink.clips,
                               recorder: recorder)
        self.parts = parts
        self.camera = camera
        self.stream = stream
        let tls = try Self.tlsFiles(settings: settings, logger: logger)
        let server = Self.makeServer(settings: settings, camera: camera, stream: stream, parts: parts, tokens: tokens, tls: tls,
                                     startedAt: startedAt,
                                     events: events?.api(namer: Self.eventNamer(events, camera, settings, logger), recordings: recordings),
                                     recordings: recordings, logger: logger)
        self.server = server
        watchdog.alsoRequire { seconds in server.serviceResponsive(within: seconds) }
    }

    /// Continuous recording when `record.enabled` (it needs the H.264 encoder): its store loaded.
    private static func segmentRecorder(settings: ServeSettings, feed: VideoFeed?, logger: Logger) throws -> SegmentRecorder? {
        guard settings.record.enabled else { return nil }
        guard let feed else {
            logger.warning("recording: off (it needs video.h264)")
            return nil
        }
        let store = RecordingStore(dataDirectory: settings.dataDir, limits: settings.record.limits)
        let cut: Int
        do {
            cut = try store.load()
        } catch {
            throw ConfigError.invalid("cannot use the recordings directory \(store.directory): \(error)")
        }
        if cut > 0 { logger.notice("recording: \(cut) segment(s) cut short by an unclean stop kept up to their last fragment") }
        logger.info("recording on", metadata: ["directory": "\(store.directory)", "segments": "\(store.list().count)",
                                               "segmentSeconds": "\(settings.record.segmentSeconds)"])
        return SegmentRecorder(store: store, feed: feed, segmentSeconds: settings.record.segmentSeconds, logger: logger)
    }

    /// What `/api/state` and `/metrics` read beside the camera.
    struct StateParts: Sendable {
        let video: (feed: VideoFeed?, stats: VideoStats)
        let publishers: [Publisher]
        let clips: ClipRecorder?
        let recorder: SegmentRecorder?
    }

    /// Naming from face events uses a second detector of the same kind, made on first use.
    private static func eventNamer(_ events: EventServices?, _ camera: CameraGraph, _ settings: ServeSettings,
                                   _ logger: Logger) -> EventNamer? {
        guard let events, let faces = camera.faceService else { return nil }
        return EventNamer(store: events.store, faces: faces) {
            try FaceDetectorFactory.make(modelPath: settings.faceModel, logger: logger)
        }
    }

    public var port: Int { server.boundPort }
    public var latestFrame: EncodedFrame? { stream.slot.latest }

    public func start() throws {
        try server.start()
        let server = self.server
        stream.connect(wake: { server.wake() })
        h264?.connect(wake: { server.wake() })
        try camera.start()
        recorder?.start()
        for publisher in publishers { publisher.start() }
        logger.info("serving", metadata: ["url": "\(settings.tlsEnabled ? "https" : "http")://\(settings.host):\(server.boundPort)/",
                                          "source": "\(settings.source)"])
        ServiceManager.ready(status: "serving \(settings.source) on \(settings.host):\(server.boundPort)")
    }

    public func stop() {
        ServiceManager.stopping()
        for publisher in publishers { publisher.stop() }
        camera.stop()
        recorder?.stop()
        stream.connect(wake: nil)
        h264?.connect(wake: nil)
        server.stop()
    }

    public func state() -> ServerState {
        Self.state(camera: camera, startedAt: startedAt, parts: parts)
    }

    public func metricsText() -> String {
        var status: (@Sendable () -> EventStatus)?
        if let events { status = { events.status } }
        return Self.metrics(camera: camera, startedAt: startedAt, parts: parts, events: status)
    }

    // MARK: - Assembly of the HTTP side

    static func state(camera: CameraGraph, startedAt: UInt64, parts: StateParts) -> ServerState {
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

    static func metrics(camera: CameraGraph, startedAt: UInt64, parts: StateParts,
                        events: (@Sendable () -> EventStatus)?) -> String {
        let snapshot = camera.stats.snapshot()
        let video = parts.video
        let publishers = parts.publishers
        return PrometheusText.render(stats: snapshot, status: camera.capture.status,
                                     templates: camera.templates.all.count, uptime: uptime(since: startedAt),
                                     sinks: camera.sinkCounts)
            + PrometheusText.render(video: video.stats.snapshot(feed: video.feed, webSocketClients: snapshot.webSocketClients),
                                    encode: video.stats.encodeHistograms())
            + (publishers.isEmpty ? "" : PrometheusText.render(publish: publishers.map(\.snapshot)))
            + (events.map { PrometheusText.render(events: $0()) } ?? "")
            + (parts.recorder.map { PrometheusText.render(recording: $0.snapshot) } ?? "")
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

    private static func makeServer(settings: ServeSettings, camera: CameraGraph, stream: StreamSink, parts: StateParts,
                                   tokens: TokenStore, tls: TLSFiles?, startedAt: UInt64, events: EventAPI?,
                                   recordings: RecordingAPI?, logger: Logger) -> StreamServer {
        let videoParts = parts.video
        let capture = camera.capture
        let templates = TemplateAPI(library: camera.templates, store: camera.templateStore,
                                    uploadedNames: camera.uploadedTemplateNames,
                                    defaultThreshold: settings.templateThreshold,
                                    frameSize: { capture.status.format.map { ($0.width, $0.height) } },
                                    storageFailures: StorageFailureReporter(stats: camera.stats, logger: logger))
        let auth = AuthGuard(tokens: tokens, sessions: SessionStore(lifetime: settings.sessionMinutes * 60),
                             policy: AccessPolicy(settings: settings))
        let sources = SourcesAPI(configured: settings.offeredSources, current: { capture.status.spec },
                                 switchTo: { spec in try camera.switchSource(to: spec) },
                                 isAdmin: { request in Routes.isAdmin(auth, request) })
        let router = Routes.router(Routes.Parts(
            state: { state(camera: camera, startedAt: startedAt, parts: parts) },
            metrics: { metrics(camera: camera, startedAt: startedAt, parts: parts, events: events?.status) },
            latestFrame: { stream.slot.latest },
            staticFiles: StaticFiles(root: ResourceLocator.locate(settings.webRoot)),
            templates: templates, sources: sources, faces: camera.faceService.map { FaceAPI(service: $0) },
            auth: auth,
            live: { capture.status.state == .live }, events: events, recordings: recordings))
        var options = StreamServer.Options()
        options.host = settings.host
        options.port = settings.port
        options.tls = tls
        options.videoMaxLagSeconds = settings.video.maxLagSeconds
        options.videoLowAvailable = settings.video.lowEnabled
        return StreamServer(options: options, frames: stream.slot, stats: camera.stats, logger: logger, router: router,
                            access: auth, video: videoParts.feed.map { ($0, videoParts.stats) })
    }
}
