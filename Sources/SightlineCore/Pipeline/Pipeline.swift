import Foundation
import Logging

/// The serial pipeline: takes the newest frame from the mailbox, runs the
/// stages, encodes the JPEG and the JSON, and publishes the result to the
/// latest-frame slot.
///
/// Frame budget: 1/fps of the source. A frame that arrived while the
/// pipeline was busy and waited so long that it would reach clients later
/// than `maxAgeBudgets` budgets after capture (going by the recent
/// processing time) is dropped as `late`; the pipeline then waits for the
/// next frame, which is as fresh as any can be and is always processed, so
/// the pipeline never starves. Frames replaced in the mailbox are counted
/// as `superseded` by the capture loop.
///
/// Threads: everything but `start`/`stop` runs on the pipeline thread,
/// which owns the stages, the encoder and `averageProcessing`.
public final class Pipeline: @unchecked Sendable {
    public struct Options: Sendable {
        public var maxAgeBudgets = 2.0
        /// Test hook: extra time every frame spends in the pipeline.
        public var debugDelaySeconds = 0.0
        public init() {}
    }

    private let mailbox: FrameMailbox
    private let stats: PipelineStats
    private let stages: [PipelineStage]
    private let encoder: JPEGEncoder
    private let output: LatestFrameSlot
    private let budgetSeconds: @Sendable () -> Double
    private let onPublish: @Sendable () -> Void
    private let options: Options
    private let logger: Logger

    private var averageProcessing = 0.0       // pipeline thread
    private let lock = NSLock()
    private var stopRequested = false         // guarded by lock
    private let finished = DispatchSemaphore(value: 0)
    private var started = false               // guarded by lock

    public init(mailbox: FrameMailbox, stats: PipelineStats, stages: [PipelineStage], encoder: JPEGEncoder,
                output: LatestFrameSlot, options: Options = Options(), logger: Logger,
                budgetSeconds: @escaping @Sendable () -> Double, onPublish: @escaping @Sendable () -> Void) {
        self.mailbox = mailbox
        self.stats = stats
        self.stages = stages
        self.encoder = encoder
        self.output = output
        self.options = options
        self.logger = logger
        self.budgetSeconds = budgetSeconds
        self.onPublish = onPublish
    }

    public func start() {
        lock.withLock { started = true }
        let thread = Thread { [self] in
            while !lock.withLock({ stopRequested }) {
                let idleSince = MonotonicClock.nanos()
                guard let frame = mailbox.take(timeout: 0.25) else { continue }
                handle(frame, waitedBehindBusyPipeline: frame.capturedNanos < idleSince)
            }
            finished.signal()
        }
        thread.name = "sightline.pipeline"
        thread.start()
    }

    public func stop() {
        let wasStarted = lock.withLock { () -> Bool in
            stopRequested = true
            return started
        }
        if wasStarted { finished.wait() }
    }

    /// Runs one frame through the stages and publishes it, unless it waited
    /// behind a busy pipeline for too long (pipeline thread; also called
    /// directly by tests).
    public func handle(_ frame: Frame, waitedBehindBusyPipeline: Bool = false) {
        if waitedBehindBusyPipeline {
            let age = Double(MonotonicClock.nanos() &- frame.capturedNanos) / 1e9
            if age + averageProcessing > options.maxAgeBudgets * budgetSeconds() {
                stats.frameDropped(.late)
                return
            }
        }
        let start = MonotonicClock.nanos()
        do {
            let encoded = try process(frame)
            output.publish(encoded)
            stats.frameProcessed()
            onPublish()
        } catch {
            stats.frameDropped(.error)
            logger.error("frame failed", metadata: ["seq": "\(frame.seq)", "error": "\(error)"])
        }
        let spent = Double(MonotonicClock.nanos() - start) / 1e9
        averageProcessing = averageProcessing == 0 ? spent : averageProcessing * 0.9 + spent * 0.1
    }

    public func process(_ frame: Frame) throws -> EncodedFrame {
        var context = FrameContext(frame: frame)
        for stage in stages {
            let start = MonotonicClock.nanos()
            try stage.process(&context)
            if let name = stage.stage { stats.stage(name, seconds: Double(MonotonicClock.nanos() - start) / 1e9) }
        }
        if options.debugDelaySeconds > 0 {
            MonotonicClock.sleep(until: MonotonicClock.nanos() + UInt64(options.debugDelaySeconds * 1e9))
        }
        let encodeStart = MonotonicClock.nanos()
        let jpeg = try encoder.encode(frame.image)
        stats.stage(.encode, seconds: Double(MonotonicClock.nanos() - encodeStart) / 1e9)
        let image = frame.image
        let message = FrameMessage(seq: frame.seq, capturedAt: frame.capturedAt, width: image.width, height: image.height,
                                   jpegBytes: jpeg.count, detections: context.detections,
                                   groundTruth: FrameMessage.truths(frame.groundTruth, width: image.width, height: image.height))
        return EncodedFrame(seq: frame.seq, capturedAt: frame.capturedAt, capturedNanos: frame.capturedNanos,
                            width: image.width, height: image.height, json: try message.jsonData(), jpeg: jpeg)
    }
}
