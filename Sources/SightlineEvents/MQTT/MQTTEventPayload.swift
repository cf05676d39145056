import Foundation
import SightlineSupport
import SightlineVision

/// The `<prefix>/events` message, in Frigate's shape:
/// `{"type": "new"|"update"|"end", "before": {...}, "after": {...}}`, each
/// side with `id`, `camera`, `label`, `sub_label` (`[name, confidence]` for
/// a recognised face, else null), `score` and `box` (pixels, `[x1, y1, x2,
/// y2]`) and `box_normalized` in the side's frame, `top_score`,
/// `frame_time`, `start_time`, `end_time` (null while open), and
/// `snapshot` (the best frame: its time, seq, score and box), `has_clip`
/// (true when clips are on: the clip is written while the event runs).
/// Sightline adds `clip` (the clip's URL path, with `has_clip`), `kind`, `start_seq`, `frame_seq`, `frames`, a face's `track_id`,
/// and the face's `roll`, `yaw`, `smile` and `eyes_closed` at the best
/// frame (omitted when unknown).
public struct MQTTEventPayload: Encodable, Sendable {
    public let type: EventChange.Kind
    public let before: Side
    public let after: Side

    public init(type: EventChange.Kind, before: EventRecord, after: EventRecord, clips: Bool = false) {
        self.type = type
        self.before = Side(before, clips: clips)
        self.after = Side(after, clips: clips)
    }

    public func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }

    public struct Side: Encodable, Sendable {
        let record: EventRecord
        let clips: Bool

        init(_ record: EventRecord, clips: Bool) {
            self.record = record
            self.clips = clips
        }

        struct Snapshot: Encodable {
            var frame_time: Double
            var seq: UInt64
            var score: Double
            var box: [Int]
            var box_normalized: NormalizedBox
        }

        enum Key: String, CodingKey {
            case id, camera, label, sub_label, score, top_score, box, box_normalized, frame_time, start_time, end_time
            case has_snapshot, has_clip, clip, snapshot, kind, start_seq, frame_seq, frames, track_id
            case roll, yaw, smile, eyes_closed
        }

        public func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: Key.self)
            let r = record
            try c.encode(r.id, forKey: .id)
            try c.encode(r.camera, forKey: .camera)
            try c.encode(r.label, forKey: .label)
            if let name = r.name {
                var pair = c.nestedUnkeyedContainer(forKey: .sub_label)
                try pair.encode(name)
                if let confidence = r.nameConfidence { try pair.encode(confidence.rounded(toPlaces: 4)) } else { try pair.encodeNil() }
            } else {
                try c.encodeNil(forKey: .sub_label)
            }
            try c.encode(r.score.rounded(toPlaces: 4), forKey: .score)
            try c.encode(r.best.score.rounded(toPlaces: 4), forKey: .top_score)
            try c.encode(Self.pixels(r.box, r), forKey: .box)
            try c.encode(r.box, forKey: .box_normalized)
            try c.encode(r.lastTime, forKey: .frame_time)
            try c.encode(r.startTime, forKey: .start_time)
            if let end = r.endTime { try c.encode(end, forKey: .end_time) } else { try c.encodeNil(forKey: .end_time) }
            try c.encode(true, forKey: .has_snapshot)
            try c.encode(clips, forKey: .has_clip)
            if clips { try c.encode("/api/events/\(r.id)/clip.mp4", forKey: .clip) }
            try c.encode(Snapshot(frame_time: r.best.time, seq: r.best.seq, score: r.best.score.rounded(toPlaces: 4),
                                  box: Self.pixels(r.best.box, r), box_normalized: r.best.box), forKey: .snapshot)
            try c.encode(r.kind, forKey: .kind)
            try c.encode(r.startSeq, forKey: .start_seq)
            try c.encode(r.lastSeq, forKey: .frame_seq)
            try c.encode(r.frames, forKey: .frames)
            try c.encodeIfPresent(r.trackId, forKey: .track_id)
            try c.encodeIfPresent(r.best.roll, forKey: .roll)
            try c.encodeIfPresent(r.best.yaw, forKey: .yaw)
            try c.encodeIfPresent(r.best.smile, forKey: .smile)
            try c.encodeIfPresent(r.best.eyesClosed, forKey: .eyes_closed)
        }

        /// `[x1, y1, x2, y2]` in the frame's pixels (Frigate's form), clamped to the frame.
        static func pixels(_ box: NormalizedBox, _ r: EventRecord) -> [Int] {
            let w = Double(r.width), h = Double(r.height)
            func clamp(_ v: Double, _ limit: Double) -> Int { Int(max(0, min(limit, v)).rounded()) }
            return [clamp(box.x * w, w), clamp(box.y * h, h), clamp((box.x + box.w) * w, w), clamp((box.y + box.h) * h, h)]
        }
    }
}
