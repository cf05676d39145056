import Foundation
import Synchronization
import SightlineVision
import SightlineSupport

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

/// A duration as it is recorded, for a listener that keeps its own
/// histograms of it (`/metrics`, through swift-prometheus).
public enum Timing: Sendable, Hashable {
    case stage(StageName)
    case captureToSend
    case encode(VideoRendition)
}

/// Called with each duration as it is recorded (seconds), on the recording thread, outside the stats' lock.
public typealias TimingObserver = @Sendable (Timing, Double) -> Void

/// Counters, rates and histograms shared by the capture thread, the
/// pipeline thread, the face worker and the lws service thread, all in one `Mutex`.
public final class PipelineStats: Sendable {
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
        /// Streaming clients connected now.
        public var webSocketClients = 0
        public var mjpegClients = 0
        /// Publish targets sending to their relay now (an audience this server cannot count).
        public var publishTargetsUp = 0
        /// How the face detector is paced now (FaceDetectionPolicy.Mode), nil without faces.
        public var faceMode: FaceDetectionPolicy.Mode?
        /// Face detection passes finished, and their rate.
        public var facePasses: UInt64 = 0
        public var facePassesPerSecond = 0.0
        /// Cuts seen by the face stage (each ended every face track).
        public var faceSceneCuts: UInt64 = 0
        /// Of `facePasses`: fine passes (small and tilted faces), and quick
        /// passes on the frame of a cut on the pipeline thread.
        public var faceFinePasses: UInt64 = 0
        public var faceCutFramePasses: UInt64 = 0
        /// Where the face passes' time went, part by part, summed since the start.
        public var facePassSeconds = FacePassSeconds()
        /// Writes to the data directory that failed (a full disk, permissions), by what they were for.
        public var storageWriteFailures: [StorageArea: UInt64] = [:]
    }

    private struct State {
        var data = Snapshot()
        var captureRate = RateMeter()
        var processedRate = RateMeter()
        var sentRate = RateMeter()
        var facePassRate = RateMeter(window: 5)
        var lastSentSeq: UInt64 = 0
        var observer: TimingObserver?
    }

    private let state: Locked<State>

    public init() {
        var initial = State()
        for stage in StageName.allCases { initial.data.stages[stage] = LatencyHistogram() }
        for reason in DropReason.allCases { initial.data.drops[reason] = 0 }
        for area in StorageArea.allCases { initial.data.storageWriteFailures[area] = 0 }
        state = Locked(initial)
    }

    public enum ClientKind: Sendable { case webSocket, mjpeg }

    /// A streaming client came (+1) or went (-1).
    public func clients(_ kind: ClientKind, change: Int) {
        state.withLock {
            switch kind {
            case .webSocket: $0.data.webSocketClients += change
            case .mjpeg: $0.data.mjpegClients += change
            }
        }
    }

    public func frameCaptured() {
        state.withLock { $0.data.captured += 1; $0.captureRate.tick() }
    }

    public func frameProcessed() {
        state.withLock { $0.data.processed += 1; $0.processedRate.tick() }
    }

    public func frameDropped(_ reason: DropReason, count: UInt64 = 1) {
        state.withLock { $0.data.drops[reason, default: 0] += count }
    }

    public func stage(_ stage: StageName, seconds: Double) {
        let observer = state.withLock {
            $0.data.stages[stage]?.record(seconds: seconds)
            if stage == .faceDetect { $0.data.facePasses += 1; $0.facePassRate.tick() }
            return $0.observer
        }
        observer?(.stage(stage), seconds)
    }

    /// Each stage's and capture-to-send duration from now on to `observer` too (nil: no more).
    public func observeTimings(_ observer: TimingObserver?) {
        state.withLock { $0.observer = observer }
    }

    /// Pipeline thread: the face stage saw a cut and ended every track.
    public func faceSceneCut() {
        state.withLock { $0.data.faceSceneCuts += 1 }
    }

    /// Pipeline thread: a finished pass was a fine one.
    public func faceFinePass() {
        state.withLock { $0.data.faceFinePasses += 1 }
    }

    /// Pipeline thread: a face pass's result was taken; `profile` is where
    /// its `seconds` went on the face thread, `recognitionSeconds` what its
    /// faces then cost here (recognition and enrollment, `FaceService`).
    public func facePassParts(_ profile: FacePassProfile, seconds: Double, recognitionSeconds: Double) {
        state.withLock { $0.data.facePassSeconds.add(profile, seconds: seconds, recognitionSeconds: recognitionSeconds) }
    }

    /// Pipeline thread: a quick pass ran on a cut's frame.
    public func faceCutFramePass() {
        state.withLock { $0.data.faceCutFramePasses += 1 }
    }

    /// Any thread: a write to the data directory failed.
    public func storageWriteFailed(_ area: StorageArea) {
        state.withLock { $0.data.storageWriteFailures[area, default: 0] += 1 }
    }

    public func faceMode(_ mode: FaceDetectionPolicy.Mode) {
        state.withLock { $0.data.faceMode = mode }
    }

    /// A publish target started (+1) or stopped (-1) sending to its relay.
    public func publishTarget(up change: Int) {
        state.withLock { $0.data.publishTargetsUp += change }
    }

    /// Whether a client streams /ws or /stream.mjpg now.
    public var hasViewers: Bool {
        state.withLock { $0.data.webSocketClients + $0.data.mjpegClients > 0 }
    }

    /// Whether a publish target is sending to its relay now.
    public var hasRelaysUp: Bool {
        state.withLock { $0.data.publishTargetsUp > 0 }
    }

    /// A frame went out to a client. The first client to send a seq counts
    /// it as sent for the fps figure; every send adds its bytes and latency.
    /// `latencySeconds` nil: a unit whose age is not the stream's latency (a joiner's catch-up).
    public func frameSent(seq: UInt64, bytes: Int, latencySeconds: Double?) {
        let observer = state.withLock { state in
            state.data.bytesSent += UInt64(bytes)
            if let latencySeconds { state.data.captureToSend.record(seconds: latencySeconds) }
            if seq > state.lastSentSeq {
                state.lastSentSeq = seq
                state.data.sent += 1
                state.sentRate.tick()
            }
            return state.observer
        }
        if let latencySeconds { observer?(.captureToSend, latencySeconds) }
    }

    public func clientSkipped(_ frames: UInt64) {
        guard frames > 0 else { return }
        state.withLock { $0.data.clientSkips += frames }
    }

    public func snapshot() -> Snapshot {
        state.withLock { state in
            var copy = state.data
            let now = MonotonicClock.nanos()
            copy.captureFPS = state.captureRate.rate(now: now)
            copy.processedFPS = state.processedRate.rate(now: now)
            copy.sentFPS = state.sentRate.rate(now: now)
            copy.facePassesPerSecond = state.facePassRate.rate(now: now)
            return copy
        }
    }
}
