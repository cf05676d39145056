import Foundation
import SightlineVision
import SightlinePipeline

/// One camera's running parts, as `CameraAssembly` built them: the capture
/// loop (capture thread), the pipeline (pipeline thread) and the sinks (each
/// on its own thread or event loop), with what the HTTP side reads and
/// changes (templates, faces, the source). Each part guards its own state,
/// so the graph itself is plain `let`s, `Sendable` as the compiler checks.
public final class CameraGraph: Sendable {
    /// The camera it was built for: its names, data directory and own settings.
    public let camera: ConfiguredCamera
    public let stats: PipelineStats
    public let capture: CaptureLoop
    public let pipeline: Pipeline
    public let sinks: [FrameSink]
    public let templates: TemplateLibrary
    public let templateStore: TemplateStore
    /// Templates that came from the data directory (uploads), at start.
    public let uploadedTemplateNames: Set<String>
    /// nil when faces are off.
    public let faceService: FaceService?
    public let facesInfo: ServerState.FacesInfo?
    public let sourceFactory: SourceFactory

    init(camera: ConfiguredCamera, stats: PipelineStats, capture: CaptureLoop, pipeline: Pipeline, sinks: [FrameSink],
         templates: TemplateLibrary, templateStore: TemplateStore, uploadedTemplateNames: Set<String>,
         faceService: FaceService?, facesInfo: ServerState.FacesInfo?, sourceFactory: SourceFactory) {
        self.camera = camera
        self.stats = stats
        self.capture = capture
        self.pipeline = pipeline
        self.sinks = sinks
        self.templates = templates
        self.templateStore = templateStore
        self.uploadedTemplateNames = uploadedTemplateNames
        self.faceService = faceService
        self.facesInfo = facesInfo
        self.sourceFactory = sourceFactory
    }

    /// Sinks first, so the first frame finds them ready; then capture and pipeline.
    public func start() throws {
        for sink in sinks { try sink.start() }
        capture.start()
        pipeline.start()
    }

    /// Capture first, so nothing new comes in; then the pipeline; then the sinks.
    public func stop() {
        capture.stop()
        pipeline.stop()
        for sink in sinks { sink.stop() }
    }

    /// Switches the running source to `spec` at the next frame boundary.
    public func switchSource(to spec: String) throws {
        let (next, _) = try sourceFactory.make(SourceSpec.parse(spec))
        capture.switchSource(to: next, spec: spec)
    }

    /// The stage names in the order they run, ending with the encode.
    public var stageNames: [String] { pipeline.stageNames }

    /// Every sink's counts by name.
    public var sinkCounts: [String: SinkCounts] {
        Dictionary(sinks.map { ($0.name, $0.counts) }, uniquingKeysWith: { first, _ in first })
    }
}
