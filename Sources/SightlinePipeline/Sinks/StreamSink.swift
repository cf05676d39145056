import Foundation
import Synchronization
import SightlineSupport

/// The libwebsockets streaming server as a sink: asks the pipeline for the
/// JPEG sizes the slot's viewers take (none while nobody watches JPEG), makes
/// each such JPEG's `/ws` JSON once, leaves the frame in the server's
/// latest-frame slot (its
/// one-slot mailbox: the newest frame wins) and wakes the service thread,
/// which sends it to each client whose socket can take it. Clients that
/// cannot keep up skip frames; those skips are this sink's `skipped`.
///
/// Threads: `deliver` runs on the pipeline thread and does not wait (a
/// small JSON encode per size watched, a locked pointer swap, `lws_cancel_service`).
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

    /// The sizes the slot's JPEG viewers take now.
    public var wantedJPEG: Set<JPEGSize> { slot.viewers.wanted }

    public func deliver(_ frame: ProcessedFrame) {
        // Each size made for the viewers, with its JSON (the same JPEG serves both sizes of a small frame).
        var sendable: [JPEGSize: (json: Data, jpeg: Data)] = [:]
        var byJPEG: [JPEGSize: (json: Data, jpeg: Data)] = [:]
        for size in JPEGSize.allCases {
            let key = frame.jpeg.key(size)
            if byJPEG[key] == nil, let jpeg = frame.jpeg.made(key) {
                var message = frame.message
                message.jpegBytes = jpeg.count
                // A frame whose JSON cannot be made is not sent at that size: never a JPEG without its JSON.
                if let json = try? message.jsonData() { byJPEG[key] = (json, jpeg) }
            }
            sendable[size] = byJPEG[key]
        }
        slot.publish(EncodedFrame(seq: frame.seq, capturedAt: frame.capturedAt, capturedNanos: frame.capturedNanos,
                                  width: frame.width, height: frame.height, jpeg: frame.jpeg, sendable: sendable))
        published.add(1, ordering: .relaxed)
        if let stream = sendable[.stream] { videoStats?.jpegFrame(bytes: stream.jpeg.count) }
        wake()
    }

    /// While a client streams: they see the boxes.
    public var faceUse: FaceUse { stats.hasViewers ? .live : .none }

    public var counts: SinkCounts {
        let count = published.load(ordering: .relaxed)
        return SinkCounts(delivered: count, consumed: count, skipped: stats.snapshot().clientSkips)
    }
}
