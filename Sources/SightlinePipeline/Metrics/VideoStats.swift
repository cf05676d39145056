import Foundation
import Synchronization
import SightlineVision
import SightlineSupport

/// The H.264 side's figures: encode time and bytes per frame (and JPEG's, to
/// compare), keyframes by why they came, the viewers on each rendition and
/// how often one was moved ahead to a keyframe. Written by the H.264 sink's
/// thread, the stream sink (pipeline thread) and the service thread, read by
/// `/api/state` and `/metrics`; all in one `Mutex`.
public final class VideoStats: Sendable {
    /// One H.264 viewer, for `/api/state` (its connection id, not its address).
    public struct Viewer: Codable, Sendable, Equatable {
        public var id: UInt64
        public var rendition: VideoRendition
        /// The viewer chose its rendition (`?rendition=`) instead of letting the server adapt.
        public var pinned: Bool
        public var frames: UInt64 = 0
        public var bytes: UInt64 = 0
        public var skipsToKeyframe: UInt64 = 0
        public var renditionChanges: UInt64 = 0
    }

    /// A rolling mean over the last `size` values.
    struct RecentMean {
        private var values: [Int] = []
        private var next = 0
        private var total = 0
        let size: Int
        init(size: Int) { self.size = size }
        mutating func add(_ value: Int) {
            if values.count < size {
                values.append(value)
            } else {
                total -= values[next]
                values[next] = value
                next = (next + 1) % size
            }
            total += value
        }
        var mean: Double? { values.isEmpty ? nil : Double(total) / Double(values.count) }
    }

    struct Lane {
        var encode = LatencyHistogram()
        var frames: UInt64 = 0
        var bytes: UInt64 = 0
        var recentBytes = RecentMean(size: 150)
        var scheduledKeyframes: UInt64 = 0
        var requestedKeyframes: UInt64 = 0
        var failures: UInt64 = 0
        /// Access units the source encoded, passed on as they came (not encoded here).
        var passedOn: UInt64 = 0
        /// Of those, units of frames the pipeline did not analyse (their boxes are another frame's).
        var passedOnUnanalysed: UInt64 = 0
    }

    private struct State {
        var lanes: [VideoRendition: Lane] = Dictionary(uniqueKeysWithValues: VideoRendition.allCases.map { ($0, Lane()) })
        var jpegBytes = RecentMean(size: 150)
        var skipsToKeyframe: UInt64 = 0
        var viewers: [UInt64: Viewer] = [:]
        var observer: TimingObserver?
    }

    private let state = Locked(State())

    public init() {}

    /// Stream sink: a frame's JPEG (what a JPEG viewer gets per frame).
    public func jpegFrame(bytes: Int) {
        state.withLock { $0.jpegBytes.add(bytes) }
    }

    /// H.264 sink: one frame encoded (its access unit with the SEI).
    public func encoded(_ rendition: VideoRendition, seconds: Double, bytes: Int, keyframe: Bool, forced: Bool) {
        let observer = state.withLock { state in
            var lane = state.lanes[rendition]!
            lane.encode.record(seconds: seconds)
            lane.frames += 1
            lane.bytes += UInt64(bytes)
            lane.recentBytes.add(bytes)
            if keyframe {
                if forced { lane.requestedKeyframes += 1 } else { lane.scheduledKeyframes += 1 }
            }
            state.lanes[rendition] = lane
            return state.observer
        }
        observer?(.encode(rendition), seconds)
    }

    /// Each encode time from now on to `observer` too (nil: no more).
    public func observeTimings(_ observer: TimingObserver?) {
        state.withLock { $0.observer = observer }
    }

    /// H.264 sink: a frame could not be encoded.
    /// Source relay: one of the source's own access units passed on (with its SEI).
    public func passedOn(_ rendition: VideoRendition, bytes: Int, keyframe: Bool, analysed: Bool) {
        state.withLock { state in
            var lane = state.lanes[rendition]!
            lane.frames += 1
            lane.bytes += UInt64(bytes)
            lane.recentBytes.add(bytes)
            lane.passedOn += 1
            if !analysed { lane.passedOnUnanalysed += 1 }
            if keyframe { lane.scheduledKeyframes += 1 }
            state.lanes[rendition] = lane
        }
    }

    public func encodeFailed(_ rendition: VideoRendition) {
        state.withLock { $0.lanes[rendition]!.failures += 1 }
    }

    // MARK: - Service thread

    public func viewerJoined(id: UInt64, rendition: VideoRendition, pinned: Bool) {
        state.withLock { $0.viewers[id] = Viewer(id: id, rendition: rendition, pinned: pinned) }
    }

    public func viewerLeft(id: UInt64) {
        _ = state.withLock { $0.viewers.removeValue(forKey: id) }
    }

    public func viewerSent(id: UInt64, bytes: Int) {
        state.withLock { state in
            state.viewers[id]?.frames += 1
            state.viewers[id]?.bytes += UInt64(bytes)
        }
    }

    public func viewerSkipped(id: UInt64) {
        state.withLock { state in
            state.skipsToKeyframe += 1
            state.viewers[id]?.skipsToKeyframe += 1
        }
    }

    public func viewerMoved(id: UInt64, to rendition: VideoRendition) {
        state.withLock { state in
            state.viewers[id]?.rendition = rendition
            state.viewers[id]?.renditionChanges += 1
        }
    }

    // MARK: - Reading

    /// The `video` object of `/api/state`.
    public struct Snapshot: Codable, Sendable {
        public struct Viewers: Codable, Sendable { public var jpeg: Int; public var h264: Int }
        public struct BytesPerFrame: Codable, Sendable { public var jpeg: Double?; public var h264: Double? }
        public struct Keyframes: Codable, Sendable { public var scheduled: UInt64; public var requested: UInt64 }
        public struct Rendition: Codable, Sendable {
            public var name: VideoRendition
            public var width: Int?
            public var height: Int?
            /// An encoder runs for it now (someone watches it).
            public var encoding: Bool
            public var viewers: Int
            public var frames: UInt64
            public var bytes: UInt64
            public var bytesPerFrame: Double?
            public var encodeMs: Percentiles
            public var keyframes: Keyframes
            public var encodeFailures: UInt64
            /// Its units are the source's own, passed on (nothing is encoded for it).
            public var passedOn: Bool
            /// Units passed on as the source encoded them, and of those, units of frames not analysed.
            public var passedOnUnits: UInt64
            public var passedOnUnanalysed: UInt64
        }
        public var viewers: Viewers
        /// The main rendition's encode time per frame.
        public var encodeMs: Percentiles
        /// Means over the last 150 frames: the JPEG every JPEG viewer gets, the main rendition's access unit.
        public var bytesPerFrame: BytesPerFrame
        /// Over every rendition: IDRs the interval brought, and IDRs forced for a viewer.
        public var keyframes: Keyframes
        /// Times a viewer fell behind and was moved ahead to the next keyframe.
        public var skipsToKeyframe: UInt64
        public var renditions: [Rendition]
        /// Each H.264 viewer (at most 100, the oldest first).
        public var h264Viewers: [Viewer]
    }

    /// `webSocketClients`: every /ws client, JPEG or H.264.
    public func snapshot(feed: VideoFeed?, webSocketClients: Int) -> Snapshot {
        let shapes = feed?.renditions() ?? []
        return state.withLock { state in
            let renditions = VideoRendition.allCases.map { name -> Snapshot.Rendition in
                let lane = state.lanes[name]!
                let shape = shapes.first { $0.rendition == name }
                return Snapshot.Rendition(name: name, width: shape?.width, height: shape?.height,
                                          encoding: shape?.width != nil && shape?.passedOn != true, viewers: shape?.viewers ?? 0,
                                          frames: lane.frames, bytes: lane.bytes,
                                          bytesPerFrame: lane.recentBytes.mean?.rounded(toPlaces: 1),
                                          encodeMs: Percentiles(lane.encode),
                                          keyframes: .init(scheduled: lane.scheduledKeyframes, requested: lane.requestedKeyframes),
                                          encodeFailures: lane.failures,
                                          passedOn: shape?.passedOn ?? false, passedOnUnits: lane.passedOn,
                                          passedOnUnanalysed: lane.passedOnUnanalysed)
            }
            let h264 = state.viewers.count
            return Snapshot(viewers: .init(jpeg: max(0, webSocketClients - h264), h264: h264),
                            encodeMs: Percentiles(state.lanes[.main]!.encode),
                            bytesPerFrame: .init(jpeg: state.jpegBytes.mean?.rounded(toPlaces: 1),
                                                 h264: state.lanes[.main]!.recentBytes.mean?.rounded(toPlaces: 1)),
                            keyframes: .init(scheduled: renditions.reduce(0) { $0 + $1.keyframes.scheduled },
                                             requested: renditions.reduce(0) { $0 + $1.keyframes.requested }),
                            skipsToKeyframe: state.skipsToKeyframe, renditions: renditions,
                            h264Viewers: Array(state.viewers.values.sorted { $0.id < $1.id }.prefix(100)))
        }
    }

    /// Encode time histograms by rendition (for `/metrics`).
    public func encodeHistograms() -> [VideoRendition: LatencyHistogram] {
        state.withLock { $0.lanes.mapValues(\.encode) }
    }
}
