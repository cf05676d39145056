import Foundation

/// Why a frame left the pipeline without being processed.
public enum DropReason: String, CaseIterable, Sendable {
    /// A newer frame replaced it in the mailbox before the pipeline took it.
    case superseded
    /// It was already too old to be sent within the frame budget when the pipeline reached it.
    case late
    /// A stage failed on it.
    case error
}

/// The named stages whose durations are kept. `faceDetect` is the face
/// detector's own time on its worker thread, off the pipeline.
public enum StageName: String, CaseIterable, Sendable {
    case convert, template, faces, faceDetect, encode, send
}

/// Counters, rates and histograms shared by the capture thread, the
/// pipeline queue and the lws service thread. Every field is guarded by `lock`.
public final class PipelineStats: @unchecked Sendable {
    public struct Snapshot: Sendable {
        public var captured: UInt64 = 0
        public var processed: UInt64 = 0
        public var sent: UInt64 = 0
        public var drops: [DropReason: UInt64] = [:]
        public var clientSkips: UInt64 = 0
        public var bytesSent: UInt64 = 0
        public var captureFPS = 0.0
        public var processedFPS = 0.0
        public var sentFPS = 0.0
        public var stages: [StageName: LatencyHistogram] = [:]
        public var captureToSend = LatencyHistogram()
    }

    private let lock = NSLock()
    private var data = Snapshot()
    private var captureRate = RateMeter()
    private var processedRate = RateMeter()
    private var sentRate = RateMeter()
    private var lastSentSeq: UInt64 = 0

    public init() {
        for stage in StageName.allCases { data.stages[stage] = LatencyHistogram() }
        for reason in DropReason.allCases { data.drops[reason] = 0 }
    }

    public func frameCaptured() {
        lock.withLock { data.captured += 1; captureRate.tick() }
    }

    public func frameProcessed() {
        lock.withLock { data.processed += 1; processedRate.tick() }
    }

    public func frameDropped(_ reason: DropReason, count: UInt64 = 1) {
        lock.withLock { data.drops[reason, default: 0] += count }
    }

    public func stage(_ stage: StageName, seconds: Double) {
        lock.withLock { data.stages[stage]?.record(seconds: seconds) }
    }

    /// A frame went out to a client. The first client to send a seq counts
    /// it as sent for the fps figure; every send adds its bytes and latency.
    public func frameSent(seq: UInt64, bytes: Int, latencySeconds: Double) {
        lock.withLock {
            data.bytesSent += UInt64(bytes)
            data.captureToSend.record(seconds: latencySeconds)
            if seq > lastSentSeq {
                lastSentSeq = seq
                data.sent += 1
                sentRate.tick()
            }
        }
    }

    public func clientSkipped(_ frames: UInt64) {
        guard frames > 0 else { return }
        lock.withLock { data.clientSkips += frames }
    }

    public func snapshot() -> Snapshot {
        lock.withLock {
            var copy = data
            let now = MonotonicClock.nanos()
            copy.captureFPS = captureRate.rate(now: now)
            copy.processedFPS = processedRate.rate(now: now)
            copy.sentFPS = sentRate.rate(now: now)
            return copy
        }
    }
}
