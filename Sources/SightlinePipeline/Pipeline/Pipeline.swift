import Foundation
import Logging
import Synchronization
import SightlineVision
import SightlineSupport

/// The serial pipeline: takes the newest frame from the mailbox, runs the
/// stages, encodes the JPEGs its sinks take now (`FrameSink.wantedJPEG`: a
/// JPEG viewer's size; none while nobody takes JPEG, and none of a frame that
/// carries its MJPEG source's own JPEG), and hands the `ProcessedFrame` to
/// every sink (each sink takes it into its own one-slot mailbox and returns
/// at once, so no sink can slow the pipeline). A JPEG nobody took then is made
/// later by whoever asks for it (`FrameJPEG`), off this thread.
///
/// Frame budget: 1/fps of the source. A frame that arrived while the
/// pipeline was busy and waited so long that it would reach clients later
/// than `maxAgeBudgets` budgets after capture (going by the recent
/// processing time) is dropped as `late`; the pipeline then waits for the
/// next frame, which is as fresh as any can be and is always processed, so
/// the pipeline never starves. Frames replaced in the mailbox are counted
/// as `superseded` by the capture loop.
///
/// Threads: `handle` and `process` run on the pipeline thread (or, in
/// tests and `bench`, on the one thread that drives a pipeline that was not
/// started), which owns the stages, the encoder and `averageProcessing`:
/// `@unchecked Sendable` by that ownership. `control` is a `Mutex`.
public final class Pipeline: @unchecked Sendable {
    public struct Options: Sendable {
        public var maxAgeBudgets = 2.0
        /// Test hook: extra time every frame spends in the pipeline.
        public var debugDelaySeconds = 0.0
        /// How wide the stream's JPEG may be (`video.jpegMaxWidth`).
        public var jpegSize = JPEGSizeRule()
        public init() {}
    }

    private let mailbox: FrameMailbox
    private let stats: PipelineStats
    private let stages: [PipelineStage]
    private let encoder: JPEGEncoder
    private let sinks: [FrameSink]
    private let budgetSeconds: @Sendable () -> Double
    private let options: Options
    private let logger: Logger
    private let clock: any SightlineClock
    /// Told the fate of every frame taken (analysed or not), for the source's own H.264.
    private let relay: SourceVideoRelay?

    private var averageProcessing = 0.0       // pipeline thread
    private let control = Locked((started: false, stopRequested: false))
    private let finished = DispatchSemaphore(value: 0)

    public init(mailbox: FrameMailbox, stats: PipelineStats, stages: [PipelineStage], encoder: JPEGEncoder,
                sinks: [FrameSink], options: Options = Options(), logger: Logger, clock: any SightlineClock = .real,
                relay: SourceVideoRelay? = nil, budgetSeconds: @escaping @Sendable () -> Double) {
        self.relay = relay
        self.mailbox = mailbox
        self.stats = stats
        self.stages = stages
        self.encoder = encoder
        self.sinks = sinks
        self.options = options
        self.logger = logger
        self.clock = clock
        self.budgetSeconds = budgetSeconds
        stageNames = stages.flatMap(\.names) + [StageName.encode.rawValue]
    }

    /// The stages' names in the order they run, ending with the encode (which
    /// runs only on frames someone takes as JPEG).
    public let stageNames: [String]

    public func start() {
        control.withLock { $0.started = true }
        let thread = Thread { [self] in
            Thread.setOSName("sightline.pipeline")
            while !control.withLock({ $0.stopRequested }) {
                let idleSince = clock.nanos()
                guard let frame = mailbox.take(timeout: 0.25) else { continue }
                handle(frame, waitedBehindBusyPipeline: frame.capturedNanos < idleSince)
            }
            finished.signal()
        }
        thread.name = "sightline.pipeline"
        thread.start()
    }

    public func stop() {
        let wasStarted = control.withLock { control -> Bool in
            control.stopRequested = true
            return control.started
        }
        if wasStarted { finished.wait() }
        // The pipeline thread is done with the stages: end their own threads (the face worker).
        for stage in stages { stage.stop() }
    }

    /// Runs one frame through the stages and hands it to the sinks, unless it waited
    /// behind a busy pipeline for too long (pipeline thread; also called
    /// directly by tests).
    public func handle(_ frame: Frame, waitedBehindBusyPipeline: Bool = false) {
        if waitedBehindBusyPipeline {
            let age = Double(clock.nanos() &- frame.capturedNanos) / 1e9
            if age + averageProcessing > options.maxAgeBudgets * budgetSeconds() {
                stats.frameDropped(.late)
                relay?.skipped(seq: frame.seq)
                return
            }
        }
        let start = clock.nanos()
        do {
            let processed = try process(frame)
            stats.frameProcessed()
            relay?.analysed(processed)
            for sink in sinks { sink.deliver(processed) }
        } catch {
            stats.frameDropped(.error)
            relay?.skipped(seq: frame.seq)
            logger.error("frame failed", metadata: ["seq": "\(frame.seq)", "error": "\(error)"])
        }
        let spent = Double(clock.nanos() - start) / 1e9
        averageProcessing = averageProcessing == 0 ? spent : averageProcessing * 0.9 + spent * 0.1
    }

    /// The stages on one frame, then its JPEG at each size in `jpegSizes`
    /// (nil: the sizes the sinks take now); each stage's time goes to the
    /// stats and into the result, the encode's only when it ran (the stats
    /// get it from the `FrameJPEG`, which reports whoever encodes).
    public func process(_ frame: Frame, jpegSizes: Set<JPEGSize>? = nil) throws -> ProcessedFrame {
        var context = FrameContext(frame: frame)
        for stage in stages {
            try stage.run(&context)
        }
        if options.debugDelaySeconds > 0 {
            clock.sleep(until: clock.nanos() + UInt64(options.debugDelaySeconds * 1e9))
        }
        for (name, seconds) in context.stageSeconds { stats.stage(name, seconds: seconds) }
        let stats = stats
        let jpeg = FrameJPEG(picture: frame.picture, source: frame.sourceUnit, quality: encoder.quality, rule: options.jpegSize,
                             encoded: { stats.stage(.encode, seconds: $0) })
        let wanted = jpegSizes ?? sinks.reduce(into: Set<JPEGSize>()) { $0.formUnion($1.wantedJPEG) }
        if !wanted.isEmpty, !jpeg.fromSource {
            let encodeStart = clock.nanos()
            for size in JPEGSize.allCases where wanted.contains(size) { _ = try jpeg.make(size, encoder: encoder) }
            context.stageSeconds[.encode] = Double(clock.nanos() - encodeStart) / 1e9
        }
        return ProcessedFrame(seq: frame.seq, capturedAt: frame.capturedAt, capturedNanos: frame.capturedNanos,
                              width: frame.width, height: frame.height, jpeg: jpeg,
                              picture: frame.picture, detections: context.detections, groundTruth: frame.groundTruth,
                              stageSeconds: context.stageSeconds, sourceUnit: frame.sourceUnit)
    }
}
