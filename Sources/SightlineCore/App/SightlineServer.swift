import Foundation
import Logging

/// The running server: wires a source, the capture loop, the pipeline and
/// the libwebsockets server together and owns them until `stop()`.
///
/// Threads: `start` and `stop` are called from the main thread. The parts
/// run on their own threads (capture, pipeline, lws service); what they
/// share (mailbox, latest-frame slot, stats, template library) is guarded
/// by those types' own locks.
public final class SightlineServer: @unchecked Sendable {
    public let settings: ServeSettings
    public let stats = PipelineStats()
    public let templates: TemplateLibrary
    public let token: AccessToken
    private let logger: Logger
    private let startedAt = MonotonicClock.nanos()
    private let mailbox = FrameMailbox()
    private let frames = LatestFrameSlot()
    private let capture: CaptureLoop
    private let pipeline: Pipeline
    private var server: StreamServer!
    /// What /api/state says of face detection (set once in init).
    private let facesInfo: ServerState.FacesInfo?

    public init(settings: ServeSettings, logger: Logger, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        try settings.validate()
        self.settings = settings
        self.logger = logger
        try FileManager.default.createDirectory(atPath: settings.dataDir, withIntermediateDirectories: true)
        token = try AccessToken.resolve(environment: environment, configured: settings.token, dataDir: settings.dataDir)
        if token.origin == .generated {
            logger.notice("generated an access token for mutating calls",
                          metadata: ["file": "\((settings.dataDir as NSString).appendingPathComponent("token"))",
                                     "token": "\(token.value)"])
        }

        var factory = SourceFactory()
        factory.cameraWidth = settings.cameraWidth
        factory.cameraHeight = settings.cameraHeight
        factory.cameraFPS = settings.cameraFPS
        factory.demoTemplatePath = ResourceLocator.locate(settings.demoTemplate)
        let (source, resolved) = try factory.make(SourceSpec.parse(settings.source))

        // Templates: uploaded ones from the data directory, then --template
        // ones (which win by name), then the demo's own when there is none.
        let store = TemplateStore(dataDirectory: settings.dataDir)
        let stored = try store.load()
        for problem in stored.problems { logger.warning("stored template skipped: \(problem)") }
        let library = TemplateLibrary(stored.templates)
        for argument in settings.templates {
            do {
                library.put(try Template.load(argument: argument).with(threshold: settings.templateThreshold))
            } catch {
                throw ConfigError.invalid("template \(argument): \(error)")
            }
        }
        if library.all.isEmpty, case .demo = resolved {
            library.put(try Template(name: SourceFactory.demoLabel, image: factory.demoTemplate(),
                                     threshold: settings.templateThreshold))
        }
        templates = library
        for template in library.all {
            logger.info("template loaded", metadata: ["name": "\(template.name)",
                                                      "size": "\(template.image.width)x\(template.image.height)"])
        }

        capture = CaptureLoop(source: source, spec: settings.source, mailbox: mailbox, stats: stats, logger: logger)
        let matcher = TemplateMatcher(options: settings.matcherOptions)
        let auth = AuthGuard(token: token)

        var detectionStages: [PipelineStage] = [TemplateStage(matcher: matcher, library: templates)]
        var faceAPI: FaceAPI?
        var faces: ServerState.FacesInfo?
        if settings.facesEnabled {
            let detector = try FaceDetectorFactory.make(modelPath: settings.faceModel, yunet: {
                var options = YuNetDetector.Options()
                options.regionOfInterest = settings.faceRegion
                options.refineLandmarks = settings.faceRefineLandmarks
                return options
            }(), haar: {
                var options = HaarFaceDetector.Options()
                options.regionOfInterest = settings.faceRegion
                return options
            }(), logger: logger)
            let service = FaceService(recognizer: try FaceRecognizer(store: PeopleStore(dataDirectory: settings.dataDir)))
            let every = max(1, settings.faceDetectEvery)
            detectionStages.insert(FaceStage(detector: detector, tracker: FaceTracker(), service: service,
                                             detectEvery: every, limit: settings.maxFaces, stats: stats), at: 0)
            faceAPI = FaceAPI(service: service, auth: auth)
            faces = ServerState.FacesInfo(detector: detector.name,
                                              refineLandmarks: detector is YuNetDetector && settings.faceRefineLandmarks,
                                              maxFaces: settings.maxFaces, detectEvery: every)
            logger.info("faces on", metadata: ["detector": "\(detector.name)", "detectEvery": "\(every)"])
        }

        facesInfo = faces

        var pipelineOptions = Pipeline.Options()
        pipelineOptions.debugDelaySeconds = settings.debugStageDelayMs / 1000
        let capture = self.capture
        let wake = WakeRelay()
        pipeline = Pipeline(mailbox: mailbox, stats: stats,
                            stages: [ConvertStage(), ConcurrentStages(detectionStages, stats: stats)],
                            encoder: try JPEGEncoder(quality: settings.jpegQuality), output: frames,
                            options: pipelineOptions, logger: logger,
                            budgetSeconds: { 1.0 / (capture.status.format?.fps ?? 30) },
                            onPublish: { wake.fire() })

        var serverOptions = StreamServer.Options()
        serverOptions.host = settings.host
        serverOptions.port = settings.port
        let templateAPI = TemplateAPI(library: library, store: store, uploadedNames: Set(stored.templates.map(\.name)),
                                      auth: auth, defaultThreshold: settings.templateThreshold,
                                      frameSize: { capture.status.format.map { ($0.width, $0.height) } })
        let sourcesAPI = SourcesAPI(configured: settings.offeredSources, auth: auth, current: { capture.status.spec },
                                    switchTo: { [factory] spec in
                                        let (next, _) = try factory.make(SourceSpec.parse(spec))
                                        capture.switchSource(to: next, spec: spec)
                                    })
        let routes = Routes(app: self, staticFiles: StaticFiles(root: ResourceLocator.locate(settings.webRoot)),
                            apis: [templateAPI.respond, sourcesAPI.respond] + (faceAPI.map { [$0.respond] } ?? []))
        server = StreamServer(options: serverOptions, frames: frames, stats: stats, logger: logger) { request in
            routes.respond(to: request)
        }
        wake.target = server
    }

    public var port: Int { server.boundPort }
    public var latestFrame: EncodedFrame? { frames.latest }

    public func start() throws {
        try server.start()
        capture.start()
        pipeline.start()
        logger.info("serving", metadata: ["url": "http://\(settings.host):\(server.boundPort)/",
                                          "source": "\(settings.source)"])
    }

    public func stop() {
        capture.stop()
        pipeline.stop()
        server.stop()
    }

    public func state() -> ServerState {
        ServerState(version: SightlineVersion.string, uptimeSeconds: uptime, status: capture.status,
                    stats: stats.snapshot(), clients: server.clientCounts, templates: templates.all, faces: facesInfo)
    }

    public func metricsText() -> String {
        PrometheusText.render(stats: stats.snapshot(), status: capture.status, clients: server.clientCounts,
                              templates: templates.all.count, uptime: uptime)
    }

    private var uptime: Double { Double(MonotonicClock.nanos() - startedAt) / 1e9 }
}

/// Lets the pipeline wake the server that is made after it. Set once on
/// the main thread before anything starts, read from the pipeline thread.
final class WakeRelay: @unchecked Sendable {
    weak var target: StreamServer?
    func fire() { target?.wake() }
}
