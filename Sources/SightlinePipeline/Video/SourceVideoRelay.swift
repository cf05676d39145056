import Foundation
import SightlineVision
import SightlineSupport

/// Passes a source's own H.264 on (DESIGN.md, "The source's own encoding"):
/// each frame's access unit goes to the main rendition of the `VideoFeed`,
/// which H.264 viewers, clips, recordings and relays read, with the
/// frame's boxes in an SEI before its first slice. Nothing is encoded.
///
/// Every access unit goes out, in capture order, since a decoder needs
/// every reference, also the units of frames the pipeline did not analyse
/// (superseded in the mailbox, dropped as late, failed). A unit waits until
/// its frame's fate is known (`analysed` or `skipped`) and every earlier
/// one has gone. A frame that was analysed carries its own detections; one
/// that was not carries those of the newest analysed frame before it, and
/// says so: `boxesFrom` in its JSON and SEI names that frame's seq (0 with
/// no detections when none was analysed yet). Boxes are never presented
/// as another frame's own.
///
/// While a session of the source passes H.264 on (`sessionStarted`), the
/// relay has the feed's main rendition (`VideoFeed.claim`) and the H.264
/// sink's encoder leaves it alone (`isActive`); the `low` rendition is
/// still encoded from the pixels.
///
/// Threads: `sessionStarted`, `captured` and `skipped` from the capture
/// thread, `analysed` and `skipped` from the pipeline thread, `isActive`
/// from the H.264 sink's; everything is in one lock, under which units are
/// published, so they reach the feed in order.
public final class SourceVideoRelay: Sendable {
    private struct Waiting {
        let seq: UInt64
        let capturedNanos: UInt64
        let capturedAt: Double
        let unit: SourceUnit
        let width: Int
        let height: Int
        var outcome: Outcome?
    }

    private enum Outcome {
        case analysed(ProcessedFrame)
        case skipped
    }

    private struct State {
        var active = false
        var waiting: [Waiting] = []
        /// The newest analysed frame passed on: its seq and detections.
        var lastAnalysed: (seq: UInt64, detections: [Detection])?
    }

    /// Units waiting for their frames' fate beyond this go out as not analysed
    /// (a pipeline that stalls must not hold the video back without bound).
    public let maxWaiting: Int
    private let feed: VideoFeed
    private let stats: VideoStats
    private let wake: @Sendable () -> Void
    private let state = Locked(State())

    /// `wake`: tells the stream server that the feed has new units.
    public init(feed: VideoFeed, stats: VideoStats, maxWaiting: Int = 50, wake: @escaping @Sendable () -> Void) {
        self.feed = feed
        self.stats = stats
        self.maxWaiting = max(1, maxWaiting)
        self.wake = wake
    }

    /// Whether the source's H.264 is being passed on now (the main rendition is the relay's).
    public var isActive: Bool { state.withLock { $0.active } }

    /// Capture thread: a source session began. When it passes H.264 on, the
    /// relay takes the main rendition (what was there goes; clients wait for
    /// the camera's first keyframe); otherwise it lets go of it.
    public func sessionStarted(_ format: SourceFormat) {
        let active = format.passedOn == .h264
        state.withLock { state in
            state.active = active
            state.waiting.removeAll()
            state.lastAnalysed = nil
            if active { feed.claim(.main, by: .source) } else { feed.claim(.main, by: .encoder) }
        }
    }

    /// Capture thread: a frame numbered for the pipeline. One with an H.264 unit waits for its fate.
    public func captured(_ frame: Frame) {
        guard let unit = frame.sourceUnit, unit.codec == .h264 else { return }
        let published = state.withLock { state -> Bool in
            guard state.active else { return false }
            state.waiting.append(Waiting(seq: frame.seq, capturedNanos: frame.capturedNanos, capturedAt: frame.capturedAt,
                                         unit: unit, width: frame.width, height: frame.height))
            return flush(&state)
        }
        if published { wake() }
    }

    /// Pipeline thread: the frame was analysed; its detections go with its unit.
    public func analysed(_ frame: ProcessedFrame) {
        resolve(frame.seq, .analysed(frame))
    }

    /// Capture or pipeline thread: the frame will not be analysed (superseded, late, failed).
    public func skipped(seq: UInt64) {
        resolve(seq, .skipped)
    }

    private func resolve(_ seq: UInt64, _ outcome: Outcome) {
        let published = state.withLock { state -> Bool in
            guard let at = state.waiting.firstIndex(where: { $0.seq == seq }) else { return false }
            state.waiting[at].outcome = outcome
            return flush(&state)
        }
        if published { wake() }
    }

    /// Publishes the waiting units whose fate is known, oldest first, up to
    /// the first still open (or past it when too many wait). Under the lock.
    private func flush(_ state: inout State) -> Bool {
        var published = false
        while let first = state.waiting.first, first.outcome != nil || state.waiting.count > maxWaiting {
            state.waiting.removeFirst()
            published = publish(first, &state) || published
        }
        return published
    }

    private func publish(_ waiting: Waiting, _ state: inout State) -> Bool {
        var message: FrameMessage
        var payload: SEIBoxes.Payload
        if case .analysed(let frame)? = waiting.outcome {
            message = frame.message
            message.jpegBytes = nil
            payload = SEIBoxes.Payload(frame: frame)
            state.lastAnalysed = (frame.seq, frame.detections)
        } else {
            let boxes = state.lastAnalysed ?? (0, [])
            message = FrameMessage(seq: waiting.seq, capturedAt: waiting.capturedAt, width: waiting.width,
                                   height: waiting.height, jpegBytes: nil, detections: boxes.detections)
            message.boxesFrom = boxes.seq
            payload = SEIBoxes.Payload(seq: waiting.seq, capturedAt: waiting.capturedAt, width: waiting.width,
                                       height: waiting.height, detections: boxes.detections, boxesFrom: boxes.seq)
        }
        do {
            let unit = try VideoAccessUnit(encoded: EncodedVideo(data: waiting.unit.data, isKeyframe: waiting.unit.isKeyframe),
                                           seq: waiting.seq, sei: SEIBoxes.nalUnit(for: payload))
            message.video = unit.info
            feed.publish(.main, seq: waiting.seq, capturedNanos: waiting.capturedNanos, capturedAt: waiting.capturedAt,
                         json: try message.jsonData(), data: unit.data, isKeyframe: unit.isKeyframe,
                         width: waiting.width, height: waiting.height, by: .source)
            stats.passedOn(.main, bytes: unit.data.count, keyframe: unit.isKeyframe, analysed: payload.boxesFrom == nil)
            return true
        } catch {
            // A unit the filter let through always has a slice and, when a keyframe, an SPS; count one that had not.
            stats.encodeFailed(.main)
            return false
        }
    }
}
