import Foundation
import Logging
import SightlineVision
import SightlineSupport
import SightlinePipeline
import SightlineHTTP
import SightlineEvents

/// The one place that builds a camera's graph from its settings (and the server's): its
/// source and capture loop, its templates, its face detector and
/// recognition, its stages in the order `serve` runs them, its pipeline and
/// the sinks it feeds. `serve` and `bench` build through `build(sinks:)`,
/// and `detect` runs the same stages on still photos through
/// `stillStages`, so all three measure and report what the server does.
///
/// Nothing here is global: building twice gives two independent cameras
/// (sharing only the data directory), which is where several cameras in
/// one process would start.
public struct CameraAssembly {
    /// The server's settings (JPEG and H.264 encoding, the test hook's delay).
    public let server: ServerSettings
    /// The camera's own: its source, templates, faces, analysis size, data directory.
    public let settings: ConfiguredCamera
    public let logger: Logger

    public init(server: ServerSettings, camera: ConfiguredCamera, logger: Logger) throws {
        try ServeSettings(server: server, own: camera.settings).validate(camera)
        self.server = server
        self.settings = camera
        self.logger = logger
    }

    /// The top level's camera of `settings` (`bench`, `detect` and tests: one camera).
    public init(settings: ServeSettings, logger: Logger) throws {
        try self.init(server: settings.server, camera: settings.topCamera, logger: logger)
    }

    /// Sources made from these settings (the running one, and switches).
    public var sourceFactory: SourceFactory {
        var factory = SourceFactory()
        factory.cameraWidth = settings.cameraWidth
        factory.cameraHeight = settings.cameraHeight
        factory.cameraFPS = settings.cameraFPS
        factory.demoTemplatePath = ResourceLocator.locate(settings.demoTemplate)
        factory.demoFacePath = ResourceLocator.locate("config/demo-face.jpg")
        factory.passOn = server.video.passThrough
        return factory
    }

    /// The whole graph, counting into `stats`, its pipeline feeding `sinks` in this order.
    /// `sharing`: the detection thread and models every camera of a server shares (nil: this camera's own).
    /// `relay`: where the source's own H.264 goes (the H.264 sink's), told every frame's fate.
    public func build(stats: PipelineStats = PipelineStats(), sinks: [FrameSink], sharing: FaceSharing? = nil,
                      relay: SourceVideoRelay? = nil) throws -> CameraGraph {
        try FileManager.default.createDirectory(atPath: settings.dataDir, withIntermediateDirectories: true)
        let factory = sourceFactory
        let (source, resolved) = try factory.make(SourceSpec.parse(settings.source))
        let store = TemplateStore(dataDirectory: settings.dataDir)
        let (library, uploaded) = try loadTemplates(store: store, demo: resolved, factory: factory)

        let mailbox = FrameMailbox()
        let capture = CaptureLoop(source: source, spec: settings.source, mailbox: mailbox, stats: stats, logger: logger,
                                  relay: relay)
        let faces = try makeFaces(stats: stats, sinks: sinks, sharing: sharing)
        let detection: [PipelineStage] = (faces.map { [$0.stage] } ?? [])
            + [TemplateStage(matcher: TemplateMatcher(options: settings.matcherOptions), library: library)]

        var options = Pipeline.Options()
        options.debugDelaySeconds = server.debugStageDelayMs / 1000
        options.jpegSize = JPEGSizeRule(maxWidth: server.jpegMaxWidth)
        let pipeline = Pipeline(mailbox: mailbox, stats: stats,
                                stages: [ConvertStage(analysisSize: AnalysisSize(longSide: settings.analysisSize)),
                                         ConcurrentStages(detection)],
                                encoder: try JPEGEncoder(quality: server.jpegQuality), sinks: sinks,
                                options: options, logger: logger, relay: relay,
                                budgetSeconds: { 1.0 / (capture.status.format?.fps ?? 30) })
        return CameraGraph(camera: settings, stats: stats, capture: capture, pipeline: pipeline, sinks: sinks,
                           templates: library, templateStore: store, uploadedTemplateNames: uploaded,
                           faceService: faces?.service, facesInfo: faces?.info, sourceFactory: factory)
    }

    /// The stages `detect` runs on a still photo: the gray conversion, every
    /// face (no tracker: photos are unrelated) and the templates (no
    /// tracking from one photo to the next), in `serve`'s order.
    public static func stillStages(templates: [Template], matcher: TemplateMatcher.Options = TemplateMatcher.Options(),
                                   faceDetector: FaceDetector?, faceLimit: Int) -> [PipelineStage] {
        var stills = matcher
        stills.tracking = false
        var stages: [PipelineStage] = [ConvertStage()]
        if let faceDetector { stages.append(StillFaceStage(detector: faceDetector, limit: faceLimit)) }
        if !templates.isEmpty {
            stages.append(TemplateStage(matcher: TemplateMatcher(options: stills), library: TemplateLibrary(templates)))
        }
        return stages
    }

    // MARK: - Parts

    /// Uploaded templates from the data directory, then `--template` ones
    /// (which win by name), then the demo's own when there is none.
    func loadTemplates(store: TemplateStore, demo resolved: SourceSpec,
                       factory: SourceFactory) throws -> (TemplateLibrary, Set<String>) {
        let stored = try store.load()
        for problem in stored.problems { logger.warning("stored template skipped: \(problem)") }
        for file in stored.removed { logger.notice("removed a leftover of an interrupted write", metadata: ["file": "\(file)"]) }
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
        for template in library.all {
            logger.info("template loaded", metadata: ["name": "\(template.name)",
                                                      "size": "\(template.image.width)x\(template.image.height)"])
        }
        return (library, Set(stored.templates.map(\.name)))
    }

    struct Faces {
        let stage: FaceStage
        let service: FaceService
        let info: ServerState.FacesInfo
    }

    /// The face detector (YuNet, else Haar), recognition and their stage; nil when faces are off.
    func makeFaces(stats: PipelineStats, sinks: [FrameSink], sharing: FaceSharing? = nil) throws -> Faces? {
        guard settings.facesEnabled else { return nil }
        var yunet = YuNetDetector.Options()
        yunet.regionOfInterest = settings.faceRegion
        yunet.refineLandmarks = settings.faceRefineLandmarks
        yunet.refineEverySeconds = settings.faceRefineEverySeconds
        yunet.trackedCropSize = settings.faceRefineCropSize
        yunet.attributesEverySeconds = settings.faceAttributesEverySeconds
        yunet.attributesPerPass = YuNetDetector.liveAttributesPerPass
        yunet.steadyAttributesFactor = YuNetDetector.liveSteadyAttributesFactor
        yunet.scoreThreshold = settings.faceMinScore
        yunet.confirmMissedTracks = true
        yunet.newFacesReadAtOnce = 1
        yunet.crowdFaces = YuNetDetector.liveCrowdFaces
        yunet.refusedEdgeFaceSeconds = YuNetDetector.liveRefusedEdgeFaceSeconds
        yunet.runtime = settings.yunetRuntime
        var haar = HaarFaceDetector.Options()
        haar.regionOfInterest = settings.faceRegion
        let choice = try FaceDetectorFactory.choose(modelPath: settings.faceModel, yunet: yunet, haar: haar, sharing: sharing,
                                                    logger: logger)
        let detector = choice.detector
        let service = FaceService(recognizer: try FaceRecognizer(store: PeopleStore(dataDirectory: settings.dataDir)),
                                  storageFailures: StorageFailureReporter(stats: stats, logger: logger))
        let every = max(1, settings.faceDetectEvery)
        var info = ServerState.FacesInfo(detector: detector.name,
                                         refineLandmarks: detector is YuNetDetector && settings.faceRefineLandmarks,
                                         maxFaces: settings.maxFaces, detectEvery: every,
                                         fallbackReason: choice.fallbackReason)
        info.runtime = (detector as? YuNetDetector)?.runtimeName
        info.maxRate = settings.faceMaxRate
        info.idleRate = settings.faceIdleRate
        logger.info("faces on", metadata: ["detector": "\(detector.name)", "detectEvery": "\(every)"])
        // Faces are looked for as the sink that uses them most asks (FrameSink.faceUse).
        let stage = FaceStage(detector: detector, tracker: FaceTracker(), service: service,
                              detectEvery: every, limit: settings.maxFaces,
                              policy: FaceDetectionPolicy(maxRate: settings.faceMaxRate, idleRate: settings.faceIdleRate,
                                                          fineEverySeconds: settings.faceFineEverySeconds),
                              faceUse: { sinks.reduce(FaceUse.none) { max($0, $1.faceUse) } },
                              opticalFlow: settings.faceOpticalFlow,
                              cutDetector: try (detector as? YuNetDetector)?.cutFrameDetector(), stats: stats,
                              sharedThread: sharing?.thread)
        return Faces(stage: stage, service: service, info: info)
    }
}
