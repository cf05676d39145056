import Foundation
import SightlineSupport
import Synchronization
import SightlineVision

/// The renditions the H.264 sink can encode: `main` at the frame's size,
/// `low` (half the size, fewer frames a second, a capped bitrate) only while
/// a viewer whose link cannot carry `main` is on it.
public enum VideoRendition: String, CaseIterable, Codable, Sendable {
    case main, low
}

/// What goes between the H.264 sink's thread and the stream server's service
/// thread: for each rendition, the access units of the last frames (a short
/// ring, newest last) with each frame's JSON, and from the server, how many
/// viewers each rendition has and whether one is waiting for a keyframe.
///
/// Everything is in one `Mutex`; the sink publishes a unit per frame, the
/// service thread reads units as sockets become writeable.
public final class VideoFeed: Sendable {
    /// One frame as `/ws?video=h264` sends it: the JSON text message (with its
    /// `video` object) and the access unit (the binary message).
    public struct Unit: Sendable {
        /// Position in its rendition's feed (1, 2, ...): a client's place in it.
        public let index: UInt64
        public let seq: UInt64
        public let capturedNanos: UInt64
        /// Unix seconds of the frame's capture (its JSON's `capturedAt`).
        public let capturedAt: Double
        public let json: Data
        public let data: Data
        public let isKeyframe: Bool
        /// The picture's size as encoded (0 when the producer did not say).
        public var width = 0
        public var height = 0
    }

    /// Who makes a rendition's units: the H.264 sink's encoder, or the
    /// source's own access units passed on (`SourceVideoRelay`). Only one
    /// at a time; the other's late publishes are ignored.
    public enum Producer: Sendable, Equatable {
        case encoder, source
    }

    private struct Lane {
        var producer = Producer.encoder
        var units: [Unit] = []
        var bytes = 0
        var lastIndex: UInt64 = 0
        var viewers = 0
        /// Consumers that are not viewers but need the encoder running (the clip recorder).
        var holds = 0
        /// Of those, holds that can take their frames late (see `holdEncoder(_:deferringUpTo:)`),
        /// how far back they need them, and how many of them want video now.
        var deferrable = 0
        var deferSeconds: [Double] = []
        var wanting = 0
        var keyframeWanted = false
        /// The picture size the encoder makes (0 until it has encoded).
        var width = 0
        var height = 0
    }

    /// Units kept per rendition: a client further behind than this has lost its place.
    /// A source's units are kept from the newest keyframe on as well (a joiner starts
    /// there, since nobody can ask a camera for a keyframe), up to `maxUnits` and `maxBytes`.
    public let capacity: Int
    public let maxUnits: Int
    public let maxBytes: Int
    private let lanes: Locked<[VideoRendition: Lane]>
    /// Threads that wait for new units (publishers), woken on every publish, by id.
    private let waiters = Locked<(next: UInt64, semaphores: [UInt64: DispatchSemaphore])>((0, [:]))

    public init(capacity: Int = 90, maxUnits: Int = 750, maxBytes: Int = 48 << 20) {
        self.capacity = max(2, capacity)
        self.maxUnits = max(self.capacity, maxUnits)
        self.maxBytes = maxBytes
        lanes = Locked(Dictionary(uniqueKeysWithValues: VideoRendition.allCases.map { ($0, Lane()) }))
    }

    // MARK: - The sink's side

    /// Whether anyone consumes `rendition` (viewers and holds), and whether a
    /// keyframe was asked for (the request is taken: the sink forces one when
    /// its rate limit allows, else asks again with `requestKeyframe`).
    public func demand(_ rendition: VideoRendition) -> (viewers: Int, keyframeWanted: Bool) {
        lanes.withLock { lanes in
            let wanted = lanes[rendition]!.keyframeWanted
            lanes[rendition]!.keyframeWanted = false
            return (lanes[rendition]!.viewers + lanes[rendition]!.holds, wanted)
        }
    }

    /// Whether any rendition has a viewer or a hold: whether the encoder must run.
    public var hasConsumers: Bool { lanes.withLock { $0.values.contains { $0.viewers + $0.holds > 0 } } }

    /// Keeps `rendition` encoded while nobody watches (the clip recorder's
    /// pre-capture), until `releaseEncoder`. Not counted as a viewer.
    public func holdEncoder(_ rendition: VideoRendition) {
        lanes.withLock { $0[rendition]!.holds += 1 }
    }

    public func releaseEncoder(_ rendition: VideoRendition) {
        lanes.withLock { $0[rendition]!.holds = max(0, $0[rendition]!.holds - 1) }
    }

    /// A hold that can take its frames late: while nobody else consumes the
    /// rendition and it does not `wantLive`, the sink may keep the last
    /// `seconds` of frames in a cheap form (an MJPEG source's own JPEGs)
    /// instead of encoding them, and encode them when it does (the clip
    /// recorder's pre-capture, which needs video only once an event begins).
    public func holdEncoder(_ rendition: VideoRendition, deferringUpTo seconds: Double) {
        lanes.withLock { lanes in
            lanes[rendition]!.holds += 1
            lanes[rendition]!.deferrable += 1
            lanes[rendition]!.deferSeconds.append(seconds)
        }
    }

    public func releaseEncoder(_ rendition: VideoRendition, deferringUpTo seconds: Double) {
        lanes.withLock { lanes in
            lanes[rendition]!.holds = max(0, lanes[rendition]!.holds - 1)
            lanes[rendition]!.deferrable = max(0, lanes[rendition]!.deferrable - 1)
            if let at = lanes[rendition]!.deferSeconds.firstIndex(of: seconds) { lanes[rendition]!.deferSeconds.remove(at: at) }
        }
    }

    /// A deferring hold needs its frames now (an event began), until `unwantLive`.
    public func wantLive(_ rendition: VideoRendition) {
        lanes.withLock { $0[rendition]!.wanting += 1 }
    }

    public func unwantLive(_ rendition: VideoRendition) {
        lanes.withLock { $0[rendition]!.wanting = max(0, $0[rendition]!.wanting - 1) }
    }

    /// Whether `rendition` must be encoded as frames come (a viewer, a hold that
    /// cannot defer, or one that wants video now), and how many seconds of frames
    /// the deferring holds need kept otherwise (0: none defers).
    public func liveDemand(_ rendition: VideoRendition) -> (live: Bool, keepSeconds: Double) {
        lanes.withLock { lanes in
            let lane = lanes[rendition]!
            let live = lane.viewers > 0 || lane.holds > lane.deferrable || lane.wanting > 0
            return (live, lane.deferrable > 0 ? lane.deferSeconds.max() ?? 0 : 0)
        }
    }

    /// A newly encoded frame, from `producer` (ignored unless it has the lane, see `claim`).
    /// The oldest beyond `capacity` go, except a source's since its newest keyframe.
    public func publish(_ rendition: VideoRendition, seq: UInt64, capturedNanos: UInt64, capturedAt: Double = 0, json: Data,
                        data: Data, isKeyframe: Bool, width: Int, height: Int, by producer: Producer = .encoder) {
        let published = lanes.withLock { lanes -> Bool in
            var lane = lanes[rendition]!
            guard lane.producer == producer else { return false }
            lane.lastIndex += 1
            lane.units.append(Unit(index: lane.lastIndex, seq: seq, capturedNanos: capturedNanos, capturedAt: capturedAt,
                                   json: json, data: data, isKeyframe: isKeyframe, width: width, height: height))
            lane.bytes += data.count
            trim(&lane)
            lane.width = width
            lane.height = height
            lanes[rendition] = lane
            return true
        }
        guard published else { return }
        for waiter in waiters.withLock({ Array($0.semaphores.values) }) { waiter.signal() }
    }

    private func trim(_ lane: inout Lane) {
        var cut = max(0, lane.units.count - capacity)
        if lane.producer == .source, cut > 0 {
            // Keep the newest keyframe and what follows it.
            let newestKey = lane.units.lastIndex { $0.isKeyframe } ?? lane.units.count
            cut = min(cut, newestKey)
        }
        var removed = lane.units[..<cut].reduce(0) { $0 + $1.data.count }
        while cut < lane.units.count - 1 && (lane.units.count - cut > maxUnits || lane.bytes - removed > maxBytes) {
            removed += lane.units[cut].data.count
            cut += 1
        }
        guard cut > 0 else { return }
        lane.bytes -= removed
        lane.units.removeFirst(cut)
    }

    /// `producer` makes `rendition`'s units from now on; when another made
    /// them until now, they go (as in `discard`) and every client waits for a keyframe.
    public func claim(_ rendition: VideoRendition, by producer: Producer) {
        lanes.withLock { lanes in
            guard lanes[rendition]!.producer != producer else { return }
            lanes[rendition]!.producer = producer
            lanes[rendition]!.units.removeAll()
            lanes[rendition]!.bytes = 0
            lanes[rendition]!.width = 0
            lanes[rendition]!.height = 0
        }
    }

    /// Whether `rendition`'s keyframes come when asked (`requestKeyframe`):
    /// the encoder's do; a camera's come when it sends them.
    public func keyframesOnRequest(_ rendition: VideoRendition) -> Bool {
        lanes.withLock { $0[rendition]!.producer == .encoder }
    }

    /// Any thread: a semaphore signalled on every unit published, until `stopWaking(id)`.
    public func wakeOnPublish() -> (id: UInt64, semaphore: DispatchSemaphore) {
        let semaphore = DispatchSemaphore(value: 0)
        let id = waiters.withLock { waiters in
            waiters.next += 1
            waiters.semaphores[waiters.next] = semaphore
            return waiters.next
        }
        return (id, semaphore)
    }

    public func stopWaking(_ id: UInt64) {
        _ = waiters.withLock { $0.semaphores.removeValue(forKey: id) }
    }

    /// The encoder of `rendition` is gone (nobody watches) or was remade (a new
    /// frame size): what it made can no longer be continued, so the units go
    /// and every client of it waits for the next keyframe.
    public func discard(_ rendition: VideoRendition, by producer: Producer = .encoder) {
        lanes.withLock { lanes in
            guard lanes[rendition]!.producer == producer else { return }
            lanes[rendition]!.units.removeAll()
            lanes[rendition]!.bytes = 0
            lanes[rendition]!.width = 0
            lanes[rendition]!.height = 0
        }
    }

    // MARK: - The server's side

    public func viewerJoined(_ rendition: VideoRendition) {
        lanes.withLock { $0[rendition]!.viewers += 1; $0[rendition]!.keyframeWanted = true }
    }

    public func viewerLeft(_ rendition: VideoRendition) {
        lanes.withLock { $0[rendition]!.viewers = max(0, $0[rendition]!.viewers - 1) }
    }

    /// A viewer waits for a keyframe (it joined, or fell behind and was moved ahead).
    public func requestKeyframe(_ rendition: VideoRendition) {
        lanes.withLock { $0[rendition]!.keyframeWanted = true }
    }

    public func newest(_ rendition: VideoRendition) -> Unit? {
        lanes.withLock { $0[rendition]!.units.last }
    }

    /// The units after `index` still kept, oldest first, and whether some
    /// between `index` and the first of them are gone (the reader fell more
    /// than `capacity` behind, or the encoder was remade).
    public func units(_ rendition: VideoRendition, after index: UInt64) -> (units: [Unit], lost: Bool) {
        lanes.withLock { lanes in
            let lane = lanes[rendition]!
            guard let first = lane.units.first else { return ([], lane.lastIndex > index && index > 0) }
            let start = max(Int(first.index), Int(index) + 1)
            let units = start > Int(lane.units.last!.index) ? [] : Array(lane.units[(start - Int(first.index))...])
            return (units, index > 0 && first.index > index + 1)
        }
    }

    /// The index of the newest unit published so far (0 before any).
    public func lastIndex(_ rendition: VideoRendition) -> UInt64 {
        lanes.withLock { $0[rendition]!.lastIndex }
    }

    /// The unit at `index`, if it is still kept.
    public func unit(_ rendition: VideoRendition, at index: UInt64) -> Unit? {
        lanes.withLock { lanes in
            let units = lanes[rendition]!.units
            guard let first = units.first, index >= first.index, index <= units.last!.index else { return nil }
            return units[Int(index - first.index)]
        }
    }

    /// The newest keyframe at or after `index`, if one is kept.
    public func newestKeyframe(_ rendition: VideoRendition, from index: UInt64) -> Unit? {
        lanes.withLock { lanes in
            lanes[rendition]!.units.last { $0.isKeyframe && $0.index >= index }
        }
    }

    /// Per rendition: viewers, the picture size being sent (nil while nothing is), and whether its units are the source's.
    public func renditions() -> [(rendition: VideoRendition, viewers: Int, width: Int?, height: Int?, passedOn: Bool)] {
        lanes.withLock { lanes in
            VideoRendition.allCases.map { r in
                let lane = lanes[r]!
                return (r, lane.viewers, lane.width > 0 ? lane.width : nil, lane.height > 0 ? lane.height : nil,
                        lane.producer == .source)
            }
        }
    }
}
