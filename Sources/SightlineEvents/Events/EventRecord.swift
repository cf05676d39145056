import Foundation
import SightlineVision
import SightlineSupport

/// One event: the life of one tracked thing (a face track, or a template's
/// appearance from the frame it was found until it had been absent for a
/// while), as the API lists it and the store keeps it. Times are Unix
/// seconds of the frames' capture; boxes are normalized to the frame.
/// Optional fields are omitted when unknown, never made up.
public struct EventRecord: Codable, Sendable, Equatable {
    /// The thing at its best frame (highest score so far).
    public struct Best: Codable, Sendable, Equatable {
        public var seq: UInt64
        public var time: Double
        public var score: Double
        public var box: NormalizedBox
        /// Faces: at that frame.
        public var roll: Double?
        public var yaw: Double?
        public var smile: Double?
        public var eyesClosed: Bool?

        public init(seq: UInt64, time: Double, score: Double, box: NormalizedBox, roll: Double? = nil,
                    yaw: Double? = nil, smile: Double? = nil, eyesClosed: Bool? = nil) {
            self.seq = seq; self.time = time; self.score = score; self.box = box
            self.roll = roll; self.yaw = yaw; self.smile = smile; self.eyesClosed = eyesClosed
        }
    }

    /// Unique across restarts and cameras: "<start time, 6 decimals>-<6 random [a-z0-9]>" (Frigate's form).
    public var id: String
    public var camera: String
    public var kind: Detection.Kind
    /// The template's label, or "face".
    public var label: String
    /// A face's recognised name (the latest one given) and its confidence.
    public var name: String?
    public var nameConfidence: Double?
    /// A face's track id while it lives (`POST /api/faces/{id}/name` takes it).
    public var trackId: Int?
    public var startTime: Double
    public var startSeq: UInt64
    /// The last frame it was seen in.
    public var lastTime: Double
    public var lastSeq: UInt64
    /// Set once it has ended (the last frame it was seen in).
    public var endTime: Double?
    /// Frames it was seen in.
    public var frames: Int
    /// Its score in the last frame it was seen in, and its box there.
    public var score: Double
    public var box: NormalizedBox
    public var best: Best
    /// The frame's size in pixels.
    public var width: Int
    public var height: Int
    /// True when it was still open when the server stopped without closing
    /// it (a crash or `kill -9`): `endTime` is then its last known sighting.
    public var interrupted: Bool?
    /// Sizes of the stored snapshot (the best frame's JPEG) and crop (its box), when stored.
    public var snapshotBytes: Int?
    public var cropBytes: Int?
    /// Its video (`GET /api/events/{id}/clip.mp4`), when one is kept.
    public var clip: ClipInfo?

    public init(id: String, camera: String, kind: Detection.Kind, label: String, name: String? = nil,
                nameConfidence: Double? = nil, trackId: Int? = nil, startTime: Double, startSeq: UInt64,
                lastTime: Double, lastSeq: UInt64, endTime: Double? = nil, frames: Int, score: Double,
                box: NormalizedBox, best: Best, width: Int, height: Int) {
        self.id = id; self.camera = camera; self.kind = kind; self.label = label
        self.name = name; self.nameConfidence = nameConfidence; self.trackId = trackId
        self.startTime = startTime; self.startSeq = startSeq; self.lastTime = lastTime; self.lastSeq = lastSeq
        self.endTime = endTime; self.frames = frames; self.score = score; self.box = box; self.best = best
        self.width = width; self.height = height
    }

    public var isOpen: Bool { endTime == nil }

    /// The label or the name equals `text` (case-insensitive).
    public func matches(labelOrName text: String) -> Bool {
        label.caseInsensitiveCompare(text) == .orderedSame
            || (name.map { $0.caseInsensitiveCompare(text) == .orderedSame } ?? false)
    }

    /// Whether an id has the form this server makes, so it is safe as a file name.
    public static func isValidID(_ id: String) -> Bool {
        let parts = id.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[1].count == 6, (8...24).contains(parts[0].count) else { return false }
        let digits = parts[0].split(separator: ".", omittingEmptySubsequences: false)
        guard digits.count == 2, digits.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCIIDigitCharacter) }) else {
            return false
        }
        return parts[1].allSatisfy { $0.isASCIIDigitCharacter || ("a"..."z").contains($0) }
    }

    /// A fresh id for an event that started at `startTime`.
    public static func makeID<R: RandomNumberGenerator>(startTime: Double, using generator: inout R) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        let suffix = String((0..<6).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] })
        return String(format: "%.6f", startTime) + "-" + suffix
    }
}
