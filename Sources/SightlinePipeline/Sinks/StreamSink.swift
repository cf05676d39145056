import Foundation
import Synchronization
import SightlineSupport

/// The libwebsockets streaming server as a sink: makes each frame's `/ws`
/// JSON once, leaves the frame in the server's latest-frame slot (its
/// one-slot mailbox: the newest frame wins) and wakes the service thread,
/// which sends it to each client whose socket can take it. Clients that
/// cannot keep up skip frames; those skips are this sink's `skipped`.
///
/// Threads: `deliver` runs on the pipeline thread and does not wait (one
/// small JSON encode, a locked pointer swap, `lws_cancel_service`).
public final class StreamSink: FrameSink {
    public let name = "stream"
    private let stats: PipelineStats
    private let wake = LockedCallback<Void, Void>()
    private let published = Atomic<UInt64>(0)

    /// The slot the server reads from.
    public let slot: LatestFrameSlot

    /// Where each frame's JPEG size is noted, to compare with H.264's (nil: nowhere).
    private let videoStats: VideoStats?

    public init(stats: PipelineStats, slot: LatestFrameSlot = LatestFrameSlot(), videoStats: VideoStats? = nil) {
        self.slot = slot
        self.stats = stats
        self.videoStats = videoStats
    }

    /// Main thread, before the pipeline starts and after the server stops:
    /// what wakes the service thread for a new frame (nil: nothing).
    public func connect(wake: (@Sendable () -> Void)?) {
        self.wake.setAction(wake)
    }

    public func deliver(_ frame: ProcessedFrame) {
        let json: Data
        do {
            json = try frame.message.jsonData()
        } catch {
            return  // A frame whose JSON cannot be made is not sent: never a JPEG without its JSON.
        }
        slot.publish(EncodedFrame(seq: frame.seq, capturedAt: frame.capturedAt, capturedNanos: frame.capturedNanos,
                                  width: frame.width, height: frame.height, json: json, jpeg: frame.jpeg))
        published.add(1, ordering: .relaxed)
        videoStats?.jpegFrame(bytes: frame.jpeg.count)
        wake()
    }

    /// While a client streams: they see the boxes.
    public var consumesFaces: Bool { stats.hasViewers }

    public var counts: SinkCounts {
        let count = published.load(ordering: .relaxed)
        return SinkCounts(delivered: count, consumed: count, skipped: stats.snapshot().clientSkips)
    }
}
