import Foundation
import SightlinePipeline

/// One message about one event: it began (`new`, once it has lasted the
/// minimum length), changed or is still going (`update`, at a bounded
/// rate), or ended (`end`). `before` is the event as the previous message
/// told it (the same as `after` for `new`, as Frigate does).
public struct EventChange: Sendable {
    public enum Kind: String, Sendable, Codable { case new, update, end }

    public let type: Kind
    public let before: EventRecord
    public let after: EventRecord
    /// Unix time of the frame that caused this message (capture time).
    public let frameTime: Double
    /// Monotonic capture time of that frame, nanoseconds (for latency).
    public let frameNanos: UInt64
    /// The best frame's JPEGs (shared, not copied): its snapshot is
    /// `best.make(.full)`, the full picture, made once by whichever consumer
    /// asks first (`bestJPEG`).
    public let best: FrameJPEG
    /// The best frame changed since the previous message about this event
    /// (always true for `new`): snapshots and crops need writing again.
    public let bestChanged: Bool

    public init(type: Kind, before: EventRecord, after: EventRecord, frameTime: Double, frameNanos: UInt64,
                best: FrameJPEG, bestChanged: Bool) {
        self.type = type
        self.before = before
        self.after = after
        self.frameTime = frameTime
        self.frameNanos = frameNanos
        self.best = best
        self.bestChanged = bestChanged
    }

    /// With the snapshot given (tests).
    public init(type: Kind, before: EventRecord, after: EventRecord, frameTime: Double, frameNanos: UInt64,
                bestJPEG: Data, bestChanged: Bool) {
        self.init(type: type, before: before, after: after, frameTime: frameTime, frameNanos: frameNanos,
                  best: FrameJPEG(encoded: bestJPEG), bestChanged: bestChanged)
    }

    /// The best frame's snapshot (the full picture), encoded on this thread
    /// unless it was made already; nil when it cannot be made.
    public var bestJPEG: Data? { try? best.make(.full) }
}

/// What one frame (or one tick without frames) changed: event messages in
/// order, and the counts in view when they changed.
public struct EventBatch: Sendable {
    public var changes: [EventChange] = []
    /// Open events per label ("face" and template labels), when any count changed.
    public var counts: [String: Int]?
    /// Open face events per recognised name, when any changed.
    public var people: [String: Int]?

    public init(changes: [EventChange] = [], counts: [String: Int]? = nil, people: [String: Int]? = nil) {
        self.changes = changes
        self.counts = counts
        self.people = people
    }

    public var isEmpty: Bool { changes.isEmpty && counts == nil && people == nil }
}
