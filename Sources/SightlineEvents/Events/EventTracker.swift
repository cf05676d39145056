import Foundation
import SightlineVision
import SightlineSupport
import SightlinePipeline

/// Turns each frame's detections into events: follows every tracked thing
/// (a face by its track id; a template's appearance by its label, and by
/// position when a template is found in several places), and says when one
/// becomes an event (`new`, once it has lasted `minSeconds`), changes or is
/// still there (`update`: when its label, name or best score changed, at
/// most every `minUpdateSeconds`, and every `updateSeconds` regardless),
/// and ends (`end`, once it has been absent for `endAfterSeconds`).
/// Things that vanish before lasting `minSeconds` are not events.
///
/// Memory only and cheap (a few dictionary and array steps per detection;
/// the best frame's JPEGs are kept by reference, `FrameJPEG`, and made only
/// when a message needs the snapshot: until then a track holds that frame's
/// pixels, afterwards only its JPEG), so `EventSink`
/// runs it on the pipeline thread for every frame and never misses a
/// track's birth or death. A value type: whoever owns it guards it.
public struct EventTracker: Sendable {
    public struct Options: Sendable, Equatable {
        /// Named in every event.
        public var camera = "camera"
        /// Shorter appearances are not events.
        public var minSeconds = 0.5
        /// An event ends once its thing has been absent this long.
        public var endAfterSeconds = 2.0
        /// An open event gets an update at least this often while in view.
        public var updateSeconds = 5.0
        /// A change (label, name, best score) waits at least this long after the previous message.
        public var minUpdateSeconds = 1.0
        /// How much the best score must grow to count as a change.
        public var scoreStep = 0.01
        /// Things followed at once at most (each keeps one best frame); more are counted in `untracked`.
        public var maxTracked = 64

        public init() {}
    }

    /// Label of face events.
    public static let faceLabel = "face"

    private struct Track {
        var record: EventRecord
        /// The event as the last message told it; nil until `new`.
        var sent: EventRecord?
        var firstNanos: UInt64
        var lastNanos: UInt64
        var lastMessageNanos: UInt64 = 0
        /// The best frame's JPEGs (its pixels until its snapshot is made).
        var best: FrameJPEG
        var bestChangedSinceMessage = true
    }

    public let options: Options
    private var tracks: [Track] = []
    private var counts: [String: Int] = [:]
    private var people: [String: Int] = [:]
    private var clock: (nanos: UInt64, wall: Double)?
    private var random = SystemRandomNumberGenerator()
    /// Appearances that ended before lasting `minSeconds`.
    public private(set) var filtered: UInt64 = 0
    /// Detections not followed because `maxTracked` things were followed already.
    public private(set) var untracked: UInt64 = 0

    public init(options: Options) {
        self.options = options
    }

    /// Things followed now (events and not-yet-events).
    public var trackedCount: Int { tracks.count }
    /// Events open now.
    public var openCount: Int { tracks.filter { $0.sent != nil }.count }
    /// Whether a face is followed now (an open face event, or one not yet lasting `minSeconds`).
    public var followsFaces: Bool { tracks.contains { $0.record.kind == .face } }

    // MARK: - Frames

    /// One processed frame: follows its detections and says what changed.
    public mutating func observe(_ frame: ProcessedFrame) -> EventBatch {
        let now = frame.capturedNanos
        clock = (now, frame.capturedAt)
        keepOnlyMadeSnapshots()
        var seen = Set<String>()
        for detection in frame.detections where detection.kind == .face {
            guard let trackID = detection.id else { continue }
            if let index = tracks.firstIndex(where: { $0.record.kind == .face && $0.record.trackId == trackID }) {
                update(index, with: detection, frame: frame)
                seen.insert(tracks[index].record.id)
            } else if let id = start(detection, frame: frame) {
                seen.insert(id)
            }
        }
        let templates = Dictionary(grouping: frame.detections.filter { $0.kind == .template && $0.label != nil },
                                   by: { $0.label! })
        for label in templates.keys.sorted() {
            for detection in templates[label]!.sorted(by: { $0.score > $1.score }) {
                if let index = appearance(for: detection, label: label, excluding: seen) {
                    update(index, with: detection, frame: frame)
                    seen.insert(tracks[index].record.id)
                } else if let id = start(detection, frame: frame) {
                    seen.insert(id)
                }
            }
        }
        var batch = EventBatch()
        for index in tracks.indices where seen.contains(tracks[index].record.id) {
            let track = tracks[index]
            if let sent = track.sent {
                let changed = track.record.label != sent.label || track.record.name != sent.name
                    || track.record.best.score >= sent.best.score + options.scoreStep
                let since = seconds(now &- track.lastMessageNanos)
                if (changed && since >= options.minUpdateSeconds) || since >= options.updateSeconds {
                    batch.changes.append(message(.update, index, nanos: now, wall: frame.capturedAt))
                }
            } else if seconds(now &- track.firstNanos) >= options.minSeconds {
                batch.changes.append(message(.new, index, nanos: now, wall: frame.capturedAt))
            }
        }
        expire(now: now, wall: frame.capturedAt, into: &batch)
        recount(into: &batch)
        return batch
    }

    /// Without frames (no signal, a stalled source): ends what has been absent long enough.
    public mutating func tick(nowNanos: UInt64) -> EventBatch {
        guard let clock, nowNanos > clock.nanos else { return EventBatch() }
        var batch = EventBatch()
        expire(now: nowNanos, wall: clock.wall + seconds(nowNanos - clock.nanos), into: &batch)
        recount(into: &batch)
        return batch
    }

    /// The server is stopping: every open event ends at its last sighting.
    public mutating func finishAll(nowNanos: UInt64) -> EventBatch {
        var batch = EventBatch()
        let wall = clock.map { $0.wall + seconds(nowNanos &- $0.nanos) } ?? MonotonicClock.wallSeconds()
        for index in tracks.indices where tracks[index].sent != nil {
            batch.changes.append(message(.end, index, nanos: nowNanos, wall: wall))
        }
        tracks.removeAll()
        recount(into: &batch)
        return batch
    }

    // MARK: - Steps

    /// The open appearance of `label` this detection continues: the only
    /// one when there is one, else the nearest (centre within a quarter of
    /// the frame) not yet matched in this frame.
    private func appearance(for detection: Detection, label: String, excluding seen: Set<String>) -> Int? {
        let candidates = tracks.indices.filter {
            tracks[$0].record.kind == .template && tracks[$0].record.label == label && !seen.contains(tracks[$0].record.id)
        }
        let sameLabel = tracks.filter { $0.record.kind == .template && $0.record.label == label }.count
        if sameLabel == 1, candidates.count == 1 { return candidates[0] }
        func distance(_ a: NormalizedBox, _ b: NormalizedBox) -> Double {
            let dx = (a.x + a.w / 2) - (b.x + b.w / 2), dy = (a.y + a.h / 2) - (b.y + b.h / 2)
            return (dx * dx + dy * dy).squareRoot()
        }
        let nearest = candidates.min { distance(tracks[$0].record.box, detection.box) < distance(tracks[$1].record.box, detection.box) }
        guard let nearest, distance(tracks[nearest].record.box, detection.box) < 0.25 else { return nil }
        return nearest
    }

    /// Starts following a new thing; returns its event id (nil when too many are followed).
    private mutating func start(_ detection: Detection, frame: ProcessedFrame) -> String? {
        guard tracks.count < options.maxTracked else {
            untracked += 1
            return nil
        }
        let isFace = detection.kind == .face
        let id = EventRecord.makeID(startTime: frame.capturedAt, using: &random)
        let record = EventRecord(
            id: id, camera: options.camera, kind: detection.kind,
            label: isFace ? Self.faceLabel : (detection.label ?? "template"),
            name: isFace ? detection.name : nil, nameConfidence: isFace ? detection.nameConfidence : nil,
            trackId: isFace ? detection.id : nil, startTime: frame.capturedAt, startSeq: frame.seq,
            lastTime: frame.capturedAt, lastSeq: frame.seq, frames: 1, score: detection.score, box: detection.box,
            best: Self.best(detection, frame: frame), width: frame.width, height: frame.height)
        tracks.append(Track(record: record, firstNanos: frame.capturedNanos, lastNanos: frame.capturedNanos,
                            best: frame.jpeg))
        return id
    }

    private mutating func update(_ index: Int, with detection: Detection, frame: ProcessedFrame) {
        var record = tracks[index].record
        record.lastTime = frame.capturedAt
        record.lastSeq = frame.seq
        record.frames += 1
        record.score = detection.score
        record.box = detection.box
        if detection.kind == .face, let name = detection.name {
            record.name = name
            record.nameConfidence = detection.nameConfidence
        }
        if detection.score > record.best.score {
            record.best = Self.best(detection, frame: frame)
            tracks[index].best = frame.jpeg
            tracks[index].bestChangedSinceMessage = true
        }
        tracks[index].record = record
        tracks[index].lastNanos = frame.capturedNanos
    }

    /// A best frame whose snapshot was made (by a message's consumer) is kept
    /// as that JPEG alone, without the frame's pixels.
    private mutating func keepOnlyMadeSnapshots() {
        for index in tracks.indices where tracks[index].best.holdsPixels {
            if let jpeg = tracks[index].best.made(.full) { tracks[index].best = FrameJPEG(encoded: jpeg) }
        }
    }

    private static func best(_ detection: Detection, frame: ProcessedFrame) -> EventRecord.Best {
        EventRecord.Best(seq: frame.seq, time: frame.capturedAt, score: detection.score, box: detection.box,
                         roll: detection.roll, yaw: detection.yaw, smile: detection.smile,
                         eyesClosed: detection.eyesClosed)
    }

    /// Ends events absent for `endAfterSeconds`; forgets flickers that never became events.
    private mutating func expire(now: UInt64, wall: Double, into batch: inout EventBatch) {
        var kept: [Track] = []
        kept.reserveCapacity(tracks.count)
        for index in tracks.indices {
            guard now > tracks[index].lastNanos, seconds(now - tracks[index].lastNanos) >= options.endAfterSeconds else {
                kept.append(tracks[index])
                continue
            }
            if tracks[index].sent != nil {
                batch.changes.append(message(.end, index, nanos: now, wall: wall))
            } else {
                filtered += 1
            }
        }
        tracks = kept
    }

    private mutating func message(_ type: EventChange.Kind, _ index: Int, nanos: UInt64, wall: Double) -> EventChange {
        var after = tracks[index].record
        if type == .end { after.endTime = after.lastTime }
        let before = type == .new ? after : (tracks[index].sent ?? after)
        let change = EventChange(type: type, before: before, after: after, frameTime: type == .end ? wall : after.lastTime,
                                 frameNanos: nanos, best: tracks[index].best,
                                 bestChanged: type == .new || tracks[index].bestChangedSinceMessage)
        tracks[index].sent = after
        tracks[index].lastMessageNanos = nanos
        tracks[index].bestChangedSinceMessage = false
        return change
    }

    /// Counts of open events per label and per recognised name; in the batch when they changed.
    private mutating func recount(into batch: inout EventBatch) {
        var labels = counts.mapValues { _ in 0 }
        var names = people.mapValues { _ in 0 }
        for track in tracks {
            guard let sent = track.sent, sent.endTime == nil else { continue }
            labels[track.record.label, default: 0] += 1
            if let name = track.record.name { names[name, default: 0] += 1 }
        }
        if labels != counts {
            counts = labels
            batch.counts = labels
        }
        if names != people {
            people = names
            batch.people = names
        }
    }

    private func seconds(_ nanos: UInt64) -> Double { Double(nanos) / 1e9 }
}
