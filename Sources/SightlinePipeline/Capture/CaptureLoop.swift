import Foundation
import Logging
import SightlineVision
import SightlineSupport

/// Runs one source on its own capture thread: opens it, paces it, numbers
/// its frames into the mailbox, and when it fails or vanishes moves to
/// "no signal" and reopens it with backoff (1 s doubling to 30 s) without
/// the rest of the server noticing more than a pause.
///
/// Threads: `run()` and everything it calls, including the source, run on
/// the capture thread, which owns `source` and `nextSeq`. `status`,
/// `stopRequested` and `replacement` are guarded by `lock` and read or set
/// from any thread.
public final class CaptureLoop: @unchecked Sendable {
    public static let initialBackoff = 1.0
    public static let maximumBackoff = 30.0

    private let mailbox: FrameMailbox
    private let stats: PipelineStats
    private let logger: Logger
    private let backoffScale: Double
    private let clock: any SightlineClock
    /// Told of every session and frame, so the source's own H.264 goes out whole.
    private let relay: SourceVideoRelay?

    private var source: FrameSource          // capture thread
    private var spec: String                 // capture thread
    private var nextSeq: UInt64 = 1          // capture thread

    private let lock = NSLock()
    private var currentStatus: SourceStatus
    private var stopRequested = false
    private var replacement: (spec: String, source: FrameSource)?
    /// The capture thread was started (it holds the loop until it ends, so
    /// the loop keeps no reference to it: a stopped camera's loop, source
    /// and frames are freed with the camera).
    private var started = false
    private let finished = DispatchSemaphore(value: 0)

    /// `backoffScale` shortens the retry delays; `clock` paces the frames,
    /// times them and times the retries (tests drive a `ManualClock`).
    public init(source: FrameSource, spec: String, mailbox: FrameMailbox, stats: PipelineStats,
                logger: Logger, backoffScale: Double = 1.0, clock: any SightlineClock = .real,
                relay: SourceVideoRelay? = nil) {
        self.relay = relay
        self.source = source
        self.spec = spec
        self.mailbox = mailbox
        self.stats = stats
        self.logger = logger
        self.backoffScale = backoffScale
        self.clock = clock
        currentStatus = SourceStatus(spec: spec, name: source.name, state: .starting)
    }

    public var status: SourceStatus { lock.withLock { currentStatus } }

    public func start() {
        let thread = Thread { [self] in
            Thread.setOSName("sightline.capture")
            run()
        }
        thread.name = "sightline.capture"
        thread.stackSize = 1 << 20
        lock.withLock { started = true }
        thread.start()
    }

    /// Asks the loop to end and waits for the capture thread to finish.
    public func stop() {
        let started = lock.withLock { () -> Bool in
            stopRequested = true
            return self.started
        }
        mailbox.close()
        clock.wakeSleepers()
        if started {
            finished.wait()
            lock.withLock { self.started = false }
        }
    }

    /// Switches to another source at the next frame boundary (any thread).
    /// The source is handed over whole: the caller must not touch it again.
    public func switchSource(to newSource: FrameSource, spec newSpec: String) {
        lock.withLock { replacement = (newSpec, newSource) }
        clock.wakeSleepers()
    }

    private var shouldStop: Bool { lock.withLock { stopRequested } }

    private func takeReplacement() -> Bool {
        guard let next = lock.withLock({ () -> (spec: String, source: FrameSource)? in
            defer { replacement = nil }
            return replacement
        }) else { return false }
        source.close()
        source = next.source
        spec = next.spec
        logger.info("switching source", metadata: ["source": "\(SourceSpec.logForm(spec))"])
        setStatus(SourceStatus(spec: spec, name: source.name, state: .starting))
        return true
    }

    private func setStatus(_ status: SourceStatus) {
        lock.withLock { currentStatus = status }
    }

    private func run() {
        defer { source.close(); finished.signal() }
        var backoff = Self.initialBackoff
        while !shouldStop {
            // A new source starts afresh: its first retry is 1 s away, not
            // the backoff the old one had reached.
            if takeReplacement() { backoff = Self.initialBackoff }
            do {
                let format = try source.open()
                logger.info("source open", metadata: ["source": "\(SourceSpec.logForm(spec))", "format": "\(format)"])
                setStatus(SourceStatus(spec: spec, name: source.name, state: .live, format: format))
                relay?.sessionStarted(format)
                backoff = Self.initialBackoff
                try stream(format: format)
            } catch {
                source.close()
                if shouldStop { break }
                let detail = "\(error)"
                // The log never holds a source's password (`SourceSpec.logForm`); the status keeps the detail whole.
                logger.warning("no signal", metadata: ["source": "\(SourceSpec.logForm(spec))",
                                                      "error": "\(SourceSpec.redactForLog(detail, spec: spec))",
                                                      "retryIn": "\(backoff)"])
                setStatus(SourceStatus(spec: spec, name: source.name, state: .noSignal, detail: detail,
                                       retryInSeconds: backoff))
                waitForRetry(seconds: backoff)
                backoff = min(backoff * 2, Self.maximumBackoff)
            }
        }
    }

    /// Reads frames until the source fails, a switch is asked for, or stop.
    private func stream(format: SourceFormat) throws {
        let interval = format.fps > 0 ? UInt64(1e9 / format.fps) : 33_333_333
        var deadline = clock.nanos()
        while !shouldStop {
            if lock.withLock({ replacement != nil }) { return }
            switch source.pacing {
            case .fixedRate:
                clock.sleep(until: deadline)
                let now = clock.nanos()
                // Woken before the deadline (stop, switch): look at those first.
                if now < deadline { continue }
                deadline = now > deadline + interval ? now + interval : deadline + interval
            case .pipeline:
                mailbox.waitUntilTaken(timeout: 1.0)
            case .device:
                break
            }
            let captured = try source.nextImage()
            let frame = Frame(seq: nextSeq, capturedAt: clock.wallSeconds(),
                              capturedNanos: clock.nanos(), picture: captured.picture,
                              groundTruth: captured.groundTruth, sourceUnit: captured.sourceUnit)
            nextSeq += 1
            stats.frameCaptured()
            // The relay holds the frame's unit before the pipeline can decide its fate.
            relay?.captured(frame)
            if let superseded = mailbox.put(frame) {
                stats.frameDropped(.superseded)
                relay?.skipped(seq: superseded.seq)
            }
        }
    }

    /// Sleeps in short steps so stop and switch requests are honoured quickly,
    /// counting the time left down in the status.
    private func waitForRetry(seconds: Double) {
        let end = clock.nanos() + UInt64(seconds * backoffScale * 1e9)
        while !shouldStop && lock.withLock({ replacement == nil }) {
            let now = clock.nanos()
            if now >= end { return }
            lock.withLock { currentStatus.retryInSeconds = Double(end - now) / 1e9 / backoffScale }
            clock.sleep(until: min(end, now + 50_000_000))
        }
    }
}
