import Foundation
import Logging
import Synchronization
import SightlineVision
import SightlineSupport

/// The H.264 sink: encodes each processed frame once for all H.264 viewers
/// (`H264FeedEncoder`, on the sink's own thread `sightline.sink.h264`, newest
/// frame wins) and wakes the stream server to send the access units.
///
/// Only while consumed: `deliver` hands a frame over only while some
/// rendition has a viewer or a hold (the clip recorder's pre-capture), or an encoder is still open (so the encoder is
/// freed on the next frame after the last viewer goes). With nobody on
/// H.264, a frame costs one lock and an atomic load.
public final class H264Sink: FrameSink {
    public let name = "h264"
    public let feed: VideoFeed
    public let stats: VideoStats
    /// Passes a source's own H.264 to the main rendition (the capture loop and pipeline tell it each frame's fate).
    public let relay: SourceVideoRelay
    private let inner: ThreadedSink
    private let wake = LockedCallback<Void, Void>()
    private let encoding = EncodingFlag()

    /// Whether a relay is being fed (nil: never).
    private let relaysUp: (@Sendable () -> Bool)?

    /// `relaysUp`: whether a publish target is sending to its relay now (its
    /// viewers see the SEI boxes, so faces are looked for at the full rate).
    public init(settings: VideoSettings, stats: VideoStats, feed: VideoFeed = VideoFeed(),
                sourceFPS: @escaping @Sendable () -> Double, relaysUp: (@Sendable () -> Bool)? = nil, logger: Logger) {
        self.feed = feed
        self.stats = stats
        self.relaysUp = relaysUp
        let wake = self.wake
        relay = SourceVideoRelay(feed: feed, stats: stats) { wake() }
        inner = ThreadedSink(name: "h264", consumer: H264FeedEncoder(feed: feed, stats: stats, settings: settings,
                                                                     sourceFPS: sourceFPS, wake: wake, relay: relay,
                                                                     encoding: encoding, logger: logger),
                             capacity: Self.framesWaiting)
    }

    /// Frames that may wait for the encoder: every frame is a clip's and a
    /// viewer's, so a stall of the encoder's thread (a busy machine, the kept
    /// JPEGs of an MJPEG source encoded once a clip wants them) is ridden out
    /// rather than a frame skipped; x264 at zerolatency catches up faster than
    /// real time. Longer stalls drop the oldest.
    public static let framesWaiting = 4

    /// Main thread, before the pipeline starts and after the server stops:
    /// what wakes the service thread for new access units (nil: nothing).
    public func connect(wake: (@Sendable () -> Void)?) {
        self.wake.setAction(wake)
    }

    public func deliver(_ frame: ProcessedFrame) {
        guard feed.hasConsumers || encoding.value.load(ordering: .relaxed) else { return }
        inner.deliver(frame)
    }

    /// While a relay is fed. Viewers of H.264 on /ws count with the stream
    /// sink's; the clip recorder's pre-capture does not count (it holds the
    /// feed at all times, and would keep faces at full rate on an empty room).
    public var faceUse: FaceUse { relaysUp?() ?? false ? .live : .none }

    public var counts: SinkCounts { inner.counts }
    public func start() throws { try inner.start() }
    public func stop() { inner.stop() }
}

/// Whether the H.264 sink's thread holds an open encoder (written there, read by the pipeline thread).
final class EncodingFlag: Sendable {
    let value = Atomic<Bool>(false)
}
