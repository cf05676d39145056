import Foundation
import SightlineVision
import SightlineSupport
import SightlinePipeline
import SightlineHTTP
import SightlineEvents

/// The body of GET /api/state (docs/api.md lists the fields).
public struct ServerState: Codable, Sendable {
    public struct Source: Codable, Sendable {
        public var spec: String
        public var name: String
        public var state: String
        public var detail: String
        public var width: Int?
        public var height: Int?
        public var fps: Double?
        public var pixelFormat: String?
        /// The source's own encoding handed on as it came ("h264", "mjpeg"); absent when what goes out is encoded here.
        public var passedOn: String?
        public var retryInSeconds: Double?
    }

    public struct Rates: Codable, Sendable { public var capture: Double; public var processed: Double; public var sent: Double }
    public struct Counts: Codable, Sendable { public var captured: UInt64; public var processed: UInt64; public var sent: UInt64 }
    public typealias Percentiles = SightlinePipeline.Percentiles
    public struct Clients: Codable, Sendable { public var ws: Int; public var mjpeg: Int }
    public struct TemplateInfo: Codable, Sendable {
        public var name: String; public var threshold: Double; public var width: Int; public var height: Int
    }
    /// The face detector running ("yunet-320", "haar"); absent when faces are off.
    public struct FacesInfo: Codable, Sendable, Equatable {
        public var detector: String
        public var refineLandmarks: Bool
        public var maxFaces: Int
        public var detectEvery: Int
        /// Why the detector is the Haar fallback (nil when it is YuNet).
        public var fallbackReason: String?
        /// What runs YuNet's network: "onnxruntime 1.32.0" or "opencv" (`faces.runtime`); nil for Haar.
        public var runtime: String?
        /// How detection is paced now: active, still or unwatched (FaceDetectionPolicy).
        public var mode: String?
        /// Detection passes a second over the last seconds, and in all.
        public var passesPerSecond: Double?
        public var passes: UInt64?
        /// Cuts to another picture seen so far (each ended every face track).
        public var sceneCuts: UInt64?
        /// Of `passes`: fine ones (small and tilted faces, FaceDetectionPolicy)
        /// and quick ones on a cut's own frame.
        public var finePasses: UInt64?
        public var cutFramePasses: UInt64?
        /// Where the passes' time went since the start, in seconds by part
        /// (`FacePassSeconds`: read, detect, crops, personCheck, attributes,
        /// other, recognition): over a window, about each part's cores.
        public var passSeconds: [String: Double]?
        /// What those passes read, counted since the start (`FacePassSeconds.counts`).
        public var passCounts: [String: UInt64]?
        /// The pacing settings: passes a second at most, and when still or unwatched.
        public var maxRate: Double?
        public var idleRate: Double?
        public init(detector: String, refineLandmarks: Bool, maxFaces: Int, detectEvery: Int,
                    fallbackReason: String? = nil) {
            self.detector = detector; self.refineLandmarks = refineLandmarks
            self.maxFaces = maxFaces; self.detectEvery = detectEvery
            self.fallbackReason = fallbackReason
        }
    }

    /// Writes to the data directory that failed: in all, and by what they
    /// were for (`templates`, `events`, `faces`).
    public struct Storage: Codable, Sendable, Equatable {
        public var writeFailures: UInt64
        public var writeFailuresByArea: [String: UInt64]
    }

    public var version: String
    public var uptimeSeconds: Double
    public var source: Source
    public var fps: Rates
    public var frames: Counts
    public var drops: [String: UInt64]
    public var clientSkips: UInt64
    public var stages: [String: Percentiles]
    public var latency: [String: Percentiles]
    public var clients: Clients
    public var bytesSent: UInt64
    public var templates: [TemplateInfo]
    public var faces: FacesInfo?
    /// Each sink's frames delivered, consumed and skipped, by sink name.
    public var sinks: [String: SinkCounts]
    public var storage: Storage
    /// H.264 and JPEG on /ws: viewers, encode time, bytes per frame, keyframes, skips (nil where not served).
    public var video: VideoStats.Snapshot?
    /// Each `publish:` target (absent without any; admins only).
    public var publish: [PublishStatus]?
    /// Event clips: writing or failing, with the last error (absent while clips are off).
    public var clips: ClipRecorder.Status?
    /// Continuous recording (absent while it is off).
    public var recording: SegmentRecorder.Status?

    public init(version: String, uptimeSeconds: Double, status: SourceStatus, stats: PipelineStats.Snapshot,
                templates: [Template], faces: FacesInfo? = nil, sinks: [String: SinkCounts] = [:]) {
        self.version = version
        self.uptimeSeconds = uptimeSeconds.rounded(toPlaces: 3)
        source = Source(spec: status.spec, name: status.name, state: status.state.rawValue, detail: status.detail,
                        width: status.format?.width, height: status.format?.height, fps: status.format?.fps,
                        pixelFormat: status.format?.pixelFormat, passedOn: status.format?.passedOn?.rawValue,
                        retryInSeconds: status.retryInSeconds.map { $0.rounded(toPlaces: 2) })
        fps = Rates(capture: stats.captureFPS.rounded(toPlaces: 2), processed: stats.processedFPS.rounded(toPlaces: 2),
                    sent: stats.sentFPS.rounded(toPlaces: 2))
        frames = Counts(captured: stats.captured, processed: stats.processed, sent: stats.sent)
        drops = Dictionary(uniqueKeysWithValues: DropReason.allCases.map { ($0.rawValue, stats.drops[$0] ?? 0) })
        clientSkips = stats.clientSkips
        stages = Dictionary(uniqueKeysWithValues: StageName.allCases.map {
            ($0.rawValue, Self.percentiles(stats.stages[$0] ?? LatencyHistogram()))
        })
        latency = ["captureToSend": Self.percentiles(stats.captureToSend)]
        clients = Clients(ws: stats.webSocketClients, mjpeg: stats.mjpegClients)
        bytesSent = stats.bytesSent
        self.templates = templates.map {
            TemplateInfo(name: $0.name, threshold: $0.threshold, width: $0.image.width, height: $0.image.height)
        }
        self.faces = faces
        if self.faces != nil {
            self.faces?.mode = stats.faceMode?.rawValue
            self.faces?.passesPerSecond = stats.facePassesPerSecond.rounded(toPlaces: 2)
            self.faces?.passes = stats.facePasses
            self.faces?.sceneCuts = stats.faceSceneCuts
            self.faces?.finePasses = stats.faceFinePasses
            self.faces?.cutFramePasses = stats.faceCutFramePasses
            self.faces?.passSeconds = Dictionary(uniqueKeysWithValues: stats.facePassSeconds.parts.map {
                ($0.name, $0.seconds.rounded(toPlaces: 4))
            })
            self.faces?.passCounts = Dictionary(uniqueKeysWithValues: stats.facePassSeconds.counts.map { ($0.name, $0.count) })
        }
        self.sinks = sinks
        let failures = Dictionary(uniqueKeysWithValues: StorageArea.allCases.map {
            ($0.rawValue, stats.storageWriteFailures[$0] ?? 0)
        })
        storage = Storage(writeFailures: failures.values.reduce(0, +), writeFailuresByArea: failures)
    }

    /// What a viewer gets: the source's spec in its public form and its detail
    /// without the server's paths or a stream's credentials (admins get it all).
    public func forViewer() -> ServerState {
        var state = self
        state.source.spec = SourceSpec.publicForm(source.spec)
        state.source.detail = SourceSpec.redact(source.detail, spec: source.spec)
        state.publish = nil
        return state
    }

    /// Milliseconds, rounded to microseconds.
    static func percentiles(_ histogram: LatencyHistogram) -> Percentiles { Percentiles(histogram) }
}
