import Foundation
import Logging
import Synchronization
import SightlineVision
import SightlineSupport
import SightlinePipeline
import SightlineHTTP

/// `sightline bench`: builds the camera exactly as `serve` does (same
/// `CameraAssembly`, same settings: source, templates, faces, quality) and
///  1. runs frames of its source through that pipeline one after another as
///     fast as it takes them, timing each stage (what a frame costs; its
///     JPEG made as for one viewer at the stream's size, `jpegMaxWidth`);
///  2. runs the whole graph live for a while (capture loop at the source's
///     pace, pipeline, face worker) and reports what it sustained, with the
///     per-stage percentiles in the same form as `/api/state`'s `stages`.
/// The report's `graph` says what ran, so a figure always names its setup.
public struct PipelineBenchmark {
    public struct StageTiming: Codable, Sendable {
        public var p50: Double, p95: Double, p99: Double, mean: Double
    }

    /// What was measured: the graph `serve` would run with these settings.
    public struct Graph: Codable, Sendable {
        public var source: String
        /// Stage names in the order they run (faces and template side by side).
        public var stages: [String]
        public var faces: ServerState.FacesInfo?
        public var templates: [String]
        public var sinks: [String]
        public var jpegQuality: Int
        /// The stream JPEG's widest (0: the frame's own size); the encode stage includes scaling to it.
        public var jpegMaxWidth: Int
    }

    public struct Report: Codable, Sendable {
        public var graph: Graph
        public var width: Int
        public var height: Int
        public var frames: Int
        /// Milliseconds per frame for each stage, frame by frame.
        public var stagesMs: [String: StageTiming]
        public var encodeMegapixelsPerSecond: Double
        /// Frames whose template box overlaps the source's ground truth
        /// (IoU ≥ 0.5); only for sources that know it (the demo).
        public var templateRecall: Double?
        public var live: Live?
    }

    public struct Live: Codable, Sendable {
        public var seconds: Double
        public var targetFPS: Double
        public var captureFPS: Double
        public var processedFPS: Double
        public var drops: [String: UInt64]
        public var captureToPublishP50Ms: Double?
        public var captureToPublishP99Ms: Double?
        /// Per-stage p50/p99 in ms over the measured seconds, as `/api/state` reports them.
        public var stages: [String: ServerState.Percentiles]
        /// Face detections finished per second on the worker (faces on).
        public var faceDetectionsPerSecond: Double?
    }

    public let settings: ServeSettings
    public let logger: Logger

    public init(settings: ServeSettings, logger: Logger) {
        self.settings = settings
        self.logger = logger
    }

    public func run(frames count: Int, liveSeconds: Double) throws -> Report {
        let assembly = try CameraAssembly(settings: settings, logger: logger)
        let graph = try assembly.build(sinks: [])
        let (source, _) = try assembly.sourceFactory.make(SourceSpec.parse(settings.source))
        let format = try source.open()
        defer { source.close() }
        var samples: [String: [Double]] = [:]
        var hits = 0, truths = 0
        for seq in 1...UInt64(max(1, count)) {
            let captured = try source.nextImage()
            let frame = Frame(seq: seq, capturedAt: MonotonicClock.wallSeconds(), capturedNanos: MonotonicClock.nanos(),
                              image: captured.image, groundTruth: captured.groundTruth)
            let start = MonotonicClock.nanos()
            let processed = try graph.pipeline.process(frame, jpegSizes: [.stream])
            samples["total", default: []].append(Double(MonotonicClock.nanos() - start) / 1e6)
            for (stage, seconds) in processed.stageSeconds { samples[stage.rawValue, default: []].append(seconds * 1000) }
            if let truth = captured.groundTruth.first {
                truths += 1
                let truthBox = NormalizedBox(pixelX: truth.x, pixelY: truth.y, width: truth.w, height: truth.h,
                                             frameWidth: frame.image.width, frameHeight: frame.image.height)
                if processed.detections.contains(where: { $0.kind == .template && $0.box.intersectionOverUnion(truthBox) >= 0.5 }) {
                    hits += 1
                }
            }
        }
        graph.stop()  // ends the face worker of the frame-by-frame graph
        let encodeMean = (samples["encode"] ?? [0]).reduce(0, +) / Double(max(1, samples["encode"]?.count ?? 1))
        let description = Graph(source: settings.source, stages: graph.stageNames, faces: graph.facesInfo,
                                templates: graph.templates.all.map(\.name), sinks: liveSeconds > 0 ? ["latency"] : [],
                                jpegQuality: settings.jpegQuality, jpegMaxWidth: settings.jpegMaxWidth)
        return Report(graph: description, width: format.width, height: format.height, frames: count,
                      stagesMs: samples.mapValues(Self.timing),
                      encodeMegapixelsPerSecond: encodeMean > 0
                          ? (Double(format.width * format.height) / 1e6 / (encodeMean / 1000)).rounded(toPlaces: 1) : 0,
                      templateRecall: truths > 0 ? (Double(hits) / Double(truths)).rounded(toPlaces: 4) : nil,
                      live: liveSeconds > 0 ? try live(assembly: assembly, seconds: liveSeconds) : nil)
    }

    private func live(assembly: CameraAssembly, seconds: Double) throws -> Live {
        let sink = LatencySink()
        let graph = try assembly.build(sinks: [sink])
        try graph.start()
        defer { graph.stop() }
        Thread.sleep(forTimeInterval: 1.0)  // warm up: the source opens, the detector loads its first frames
        let before = graph.stats.snapshot()
        sink.reset()
        let start = MonotonicClock.nanos()
        Thread.sleep(forTimeInterval: seconds)
        let after = graph.stats.snapshot()
        let elapsed = Double(MonotonicClock.nanos() - start) / 1e9
        let recorded = sink.recorded
        var stages = recorded.stages.mapValues(ServerState.percentiles)
        let detections = (after.stages[.faceDetect]?.count ?? 0) - (before.stages[.faceDetect]?.count ?? 0)
        if graph.facesInfo != nil, let detect = after.stages[.faceDetect] {
            stages[StageName.faceDetect.rawValue] = ServerState.percentiles(detect)
        }
        return Live(seconds: elapsed.rounded(toPlaces: 2), targetFPS: graph.capture.status.format?.fps ?? 0,
                    captureFPS: (Double(after.captured - before.captured) / elapsed).rounded(toPlaces: 2),
                    processedFPS: (Double(after.processed - before.processed) / elapsed).rounded(toPlaces: 2),
                    drops: Dictionary(uniqueKeysWithValues: DropReason.allCases.map {
                        ($0.rawValue, (after.drops[$0] ?? 0) - (before.drops[$0] ?? 0))
                    }),
                    captureToPublishP50Ms: recorded.age.quantile(0.5).map { ($0 * 1000).rounded(toPlaces: 3) },
                    captureToPublishP99Ms: recorded.age.quantile(0.99).map { ($0 * 1000).rounded(toPlaces: 3) },
                    stages: stages,
                    faceDetectionsPerSecond: graph.facesInfo == nil ? nil : (Double(detections) / elapsed).rounded(toPlaces: 2))
    }

    static func timing(_ values: [Double]) -> StageTiming {
        let sorted = values.sorted()
        func at(_ q: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))].rounded(toPlaces: 3) }
        return StageTiming(p50: at(0.5), p95: at(0.95), p99: at(0.99),
                           mean: (values.reduce(0, +) / Double(max(1, values.count))).rounded(toPlaces: 3))
    }
}

/// The benchmark's sink: each frame's capture-to-publish age and stage
/// times, in the histograms `/api/state` reads its percentiles from. It
/// takes JPEG at the stream's size, as one viewer would.
/// `deliver` runs on the pipeline thread; it only records, under a `Mutex`.
final class LatencySink: FrameSink {
    struct Recorded: Sendable {
        var age = LatencyHistogram()
        var stages: [String: LatencyHistogram] = [:]
    }

    let name = "latency"
    var wantedJPEG: Set<JPEGSize> { [.stream] }
    private let data = Locked((recorded: Recorded(), counts: SinkCounts()))

    func deliver(_ frame: ProcessedFrame) {
        let age = Double(MonotonicClock.nanos() &- frame.capturedNanos) / 1e9
        data.withLock { data in
            data.recorded.age.record(seconds: age)
            for (stage, seconds) in frame.stageSeconds {
                data.recorded.stages[stage.rawValue, default: LatencyHistogram()].record(seconds: seconds)
            }
            data.counts.delivered += 1
            data.counts.consumed += 1
        }
    }

    var counts: SinkCounts { data.withLock { $0.counts } }
    func reset() { data.withLock { $0.recorded = Recorded() } }
    var recorded: Recorded { data.withLock { $0.recorded } }
}
