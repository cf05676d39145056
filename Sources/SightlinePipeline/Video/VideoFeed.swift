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
    }

    private struct Lane {
        var units: [Unit] = []
        var lastIndex: UInt64 = 0
        var viewers = 0
        /// Consumers that are not viewers but need the encoder running (the clip recorder).
        var holds = 0
        var keyframeWanted = false
        /// The picture size the encoder makes (0 until it has encoded).
        var width = 0
        var height = 0
    }

    /// Units kept per rendition: a client further behind than this has lost its place.
    public let capacity: Int
    private let lanes: Locked<[VideoRendition: Lane]>
    /// Threads that wait for new units (publishers), woken on every publish, by id.
    private let waiters = Locked<(next: UInt64, semaphores: [UInt64: DispatchSemaphore])>((0, [:]))

    public init(capacity: Int = 90) {
        self.capacity = max(2, capacity)
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

    /// A newly encoded frame; the oldest beyond `capacity` goes.
    public func publish(_ rendition: VideoRendition, seq: UInt64, capturedNanos: UInt64, capturedAt: Double = 0, json: Data,
                        data: Data, isKeyframe: Bool, width: Int, height: Int) {
        lanes.withLock { lanes in
            var lane = lanes[rendition]!
            lane.lastIndex += 1
            lane.units.append(Unit(index: lane.lastIndex, seq: seq, capturedNanos: capturedNanos, capturedAt: capturedAt,
                                   json: json, data: data, isKeyframe: isKeyframe))
            if lane.units.count > capacity { lane.units.removeFirst(lane.units.count - capacity) }
            lane.width = width
            lane.height = height
            lanes[rendition] = lane
        }
        for waiter in waiters.withLock({ Array($0.semaphores.values) }) { waiter.signal() }
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
    public func discard(_ rendition: VideoRendition) {
        lanes.withLock { lanes in
            lanes[rendition]!.units.removeAll()
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

    /// Per rendition: viewers, and the picture size being encoded (nil while not encoding).
    public func renditions() -> [(rendition: VideoRendition, viewers: Int, width: Int?, height: Int?)] {
        lanes.withLock { lanes in
            VideoRendition.allCases.map { r in
                let lane = lanes[r]!
                return (r, lane.viewers, lane.width > 0 ? lane.width : nil, lane.height > 0 ? lane.height : nil)
            }
        }
    }
}
