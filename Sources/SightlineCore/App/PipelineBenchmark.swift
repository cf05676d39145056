import Foundation
import Logging

/// `sightline bench`: times each stage on demo frames, then runs the live
/// capture loop and pipeline for a while and reports what they sustained.
public struct PipelineBenchmark {
    public struct StageTiming: Codable, Sendable {
        public var p50: Double, p95: Double, p99: Double, mean: Double
    }

    public struct Report: Codable, Sendable {
        public var width: Int
        public var height: Int
        public var frames: Int
        /// Milliseconds per frame for each stage; `template` tracks from frame
        /// to frame as the server does, `templateFullSearch` never tracks.
        public var stagesMs: [String: StageTiming]
        public var encodeMegapixelsPerSecond: Double
        public var templateRecall: Double
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
    }

    public let demo: DemoSource.Options
    public let templatePath: String
    public let quality: Int
    public let matcherOptions: TemplateMatcher.Options

    public init(demo: DemoSource.Options, templatePath: String, quality: Int,
                matcherOptions: TemplateMatcher.Options = TemplateMatcher.Options()) {
        self.demo = demo
        self.templatePath = templatePath
        self.quality = quality
        self.matcherOptions = matcherOptions
    }

    public func run(frames count: Int, liveSeconds: Double) throws -> Report {
        let templateImage = try ImageIO.read(path: templatePath)
        let template = try Template(name: SourceFactory.demoLabel, image: templateImage)
        let source = DemoSource(options: demo, template: templateImage, templateLabel: SourceFactory.demoLabel)
        _ = try source.open()
        let matcher = TemplateMatcher(options: matcherOptions)
        var fullOptions = matcherOptions
        fullOptions.tracking = false
        let fullSearch = TemplateMatcher(options: fullOptions)
        let encoder = try JPEGEncoder(quality: quality)
        var samples: [String: [Double]] = [:]
        var hits = 0
        for _ in 0..<count {
            let captured = try source.nextImage()
            let t0 = MonotonicClock.nanos()
            let gray = try ImageOps.gray(captured.image)
            let t1 = MonotonicClock.nanos()
            let found = try matcher.match(templates: [template], gray: gray)
            let t2 = MonotonicClock.nanos()
            _ = try encoder.encode(captured.image)
            let t3 = MonotonicClock.nanos()
            _ = try fullSearch.match(templates: [template], gray: gray)
            let t4 = MonotonicClock.nanos()
            samples["convert", default: []].append(Double(t1 - t0) / 1e6)
            samples["template", default: []].append(Double(t2 - t1) / 1e6)
            samples["encode", default: []].append(Double(t3 - t2) / 1e6)
            samples["total", default: []].append(Double(t3 - t0) / 1e6)
            samples["templateFullSearch", default: []].append(Double(t4 - t3) / 1e6)
            let truth = captured.groundTruth[0]
            let truthBox = NormalizedBox(pixelX: truth.x, pixelY: truth.y, width: truth.w, height: truth.h,
                                         frameWidth: demo.width, frameHeight: demo.height)
            if let hit = found.first, hit.box.intersectionOverUnion(truthBox) >= 0.5 { hits += 1 }
        }
        let encodeMean = samples["encode"]!.reduce(0, +) / Double(count)
        return Report(width: demo.width, height: demo.height, frames: count,
                      stagesMs: samples.mapValues(Self.timing),
                      encodeMegapixelsPerSecond: (Double(demo.width * demo.height) / 1e6 / (encodeMean / 1000)).rounded(toPlaces: 1),
                      templateRecall: (Double(hits) / Double(count)).rounded(toPlaces: 4),
                      live: liveSeconds > 0 ? try live(seconds: liveSeconds, template: template, templateImage: templateImage) : nil)
    }

    private func live(seconds: Double, template: Template, templateImage: ImageBuffer) throws -> Live {
        var logger = Logger(label: "bench")
        logger.logLevel = .warning
        let stats = PipelineStats()
        let mailbox = FrameMailbox()
        let slot = LatestFrameSlot()
        let source = DemoSource(options: demo, template: templateImage, templateLabel: SourceFactory.demoLabel)
        let capture = CaptureLoop(source: source, spec: "demo", mailbox: mailbox, stats: stats, logger: logger)
        let matcher = TemplateMatcher(options: matcherOptions)
        let latency = LatencyRecorder()
        let fps = demo.fps
        let pipeline = Pipeline(mailbox: mailbox, stats: stats,
                                stages: [ConvertStage(),
                                         TemplateStage(matcher: matcher, library: TemplateLibrary([template]))],
                                encoder: try JPEGEncoder(quality: quality), output: slot, logger: logger,
                                budgetSeconds: { 1 / fps },
                                onPublish: { if let frame = slot.latest { latency.record(frame) } })
        capture.start()
        pipeline.start()
        Thread.sleep(forTimeInterval: 1.0)  // warm up
        let before = stats.snapshot()
        let start = MonotonicClock.nanos()
        latency.reset()
        Thread.sleep(forTimeInterval: seconds)
        let after = stats.snapshot()
        let elapsed = Double(MonotonicClock.nanos() - start) / 1e9
        capture.stop()
        pipeline.stop()
        let histogram = latency.histogram
        return Live(seconds: elapsed.rounded(toPlaces: 2), targetFPS: fps,
                    captureFPS: (Double(after.captured - before.captured) / elapsed).rounded(toPlaces: 2),
                    processedFPS: (Double(after.processed - before.processed) / elapsed).rounded(toPlaces: 2),
                    drops: Dictionary(uniqueKeysWithValues: DropReason.allCases.map {
                        ($0.rawValue, (after.drops[$0] ?? 0) - (before.drops[$0] ?? 0))
                    }),
                    captureToPublishP50Ms: histogram.quantile(0.5).map { ($0 * 1000).rounded(toPlaces: 3) },
                    captureToPublishP99Ms: histogram.quantile(0.99).map { ($0 * 1000).rounded(toPlaces: 3) })
    }

    static func timing(_ values: [Double]) -> StageTiming {
        let sorted = values.sorted()
        func at(_ q: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))].rounded(toPlaces: 3) }
        return StageTiming(p50: at(0.5), p95: at(0.95), p99: at(0.99),
                           mean: (values.reduce(0, +) / Double(max(1, values.count))).rounded(toPlaces: 3))
    }
}

/// Capture-to-publish ages, recorded on the pipeline thread and read at the end.
final class LatencyRecorder: @unchecked Sendable {
    private let lock = NSLock()
    private var data = LatencyHistogram()
    func record(_ frame: EncodedFrame) {
        let age = Double(MonotonicClock.nanos() &- frame.capturedNanos) / 1e9
        lock.withLock { data.record(seconds: age) }
    }
    func reset() { lock.withLock { data = LatencyHistogram() } }
    var histogram: LatencyHistogram { lock.withLock { data } }
}
