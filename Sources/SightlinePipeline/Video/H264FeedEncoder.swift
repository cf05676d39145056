import Foundation
import Logging
import SightlineVision
import SightlineSupport

/// The H.264 sink's work on its own thread: each frame it is handed is
/// encoded once for every rendition someone watches (`main` at the frame's
/// size; `low` smaller, at most `lowMaxFPS`), its boxes bound to it in an SEI,
/// and published to the `VideoFeed` with the frame's JSON; then the stream
/// server is woken. A rendition nobody watches has no encoder (it is freed
/// when its last viewer goes, and the next viewer starts a new one on an IDR).
///
/// Keyframes: the encoder's interval, plus one forced when a viewer waits for
/// one (joining, moved ahead), at most every `forcedKeyframeGapSeconds` per
/// rendition; a request inside the gap is kept and served when it ends.
///
/// Ownership: made on the main thread and handed whole to the sink's thread
/// (`ThreadedSink` takes it as `sending`); only that thread touches it.
final class H264FeedEncoder: FrameConsumer {
    private struct Lane {
        var encoder: H264Encoder?
        var keyframePending = false
        var lastForcedNanos: UInt64 = 0
        var lastEncodedNanos: UInt64 = 0
        var failureLoggedNanos: UInt64 = 0
        /// Low: frames captured from here on are due (see `encode`).
        var lowDueNanos: UInt64 = 0
    }

    private let feed: VideoFeed
    private let stats: VideoStats
    private let settings: VideoSettings
    private let sourceFPS: @Sendable () -> Double
    private let wake: LockedCallback<Void, Void>
    private let logger: Logger
    /// Times the forced keyframes' gap (tests drive a `ManualClock`).
    private let clock: any SightlineClock
    /// Whether any encoder is open, for the pipeline thread (`H264Sink.deliver`).
    private let encoding: EncodingFlag
    /// While it passes the source's own H.264 on, `main` is not encoded here.
    private let relay: SourceVideoRelay?
    private var lanes: [VideoRendition: Lane] = Dictionary(uniqueKeysWithValues: VideoRendition.allCases.map { ($0, Lane()) })

    init(feed: VideoFeed, stats: VideoStats, settings: VideoSettings, sourceFPS: @escaping @Sendable () -> Double,
         wake: LockedCallback<Void, Void>, relay: SourceVideoRelay? = nil, encoding: EncodingFlag, logger: Logger,
         clock: any SightlineClock = .real) {
        self.relay = relay
        self.clock = clock
        self.encoding = encoding
        self.feed = feed
        self.stats = stats
        self.settings = settings
        self.sourceFPS = sourceFPS
        self.wake = wake
        self.logger = logger
    }


    func consume(_ frame: ProcessedFrame) {
        guard let image = frame.image else { return }
        var sei: Data?
        var published = false
        let passedOn = relay?.isActive ?? false
        for rendition in VideoRendition.allCases {
            let demand = feed.demand(rendition)
            var lane = lanes[rendition]!
            defer { lanes[rendition] = lane }
            if demand.keyframeWanted { lane.keyframePending = true }
            guard demand.viewers > 0, rendition == .main || settings.lowEnabled, rendition != .main || !passedOn else {
                if lane.encoder != nil {
                    lane.encoder = nil
                    feed.discard(rendition)
                }
                lane.keyframePending = false
                continue
            }
            if rendition == .low, lane.lowDueNanos != 0,
               frame.capturedNanos + UInt64(0.4e9 / settings.lowMaxFPS) < lane.lowDueNanos {
                continue
            }
            do {
                if sei == nil { sei = try SEIBoxes.nalUnit(for: SEIBoxes.Payload(frame: frame)) }
                try encode(frame, image: image, sei: sei!, rendition: rendition, lane: &lane)
                published = true
            } catch {
                stats.encodeFailed(rendition)
                if lane.encoder != nil { feed.discard(rendition) }
                lane.encoder = nil
                lane.keyframePending = true
                if MonotonicClock.nanos() &- lane.failureLoggedNanos > 10_000_000_000 {
                    lane.failureLoggedNanos = MonotonicClock.nanos()
                    logger.error("cannot encode H.264", metadata: ["rendition": "\(rendition.rawValue)", "error": "\(error)"])
                }
            }
        }
        encoding.value.store(lanes.values.contains { $0.encoder != nil }, ordering: .relaxed)
        if published { wake() }
    }

    private func encode(_ frame: ProcessedFrame, image: ImageBuffer, sei: Data, rendition: VideoRendition,
                        lane: inout Lane) throws {
        let size = pictureSize(rendition, width: image.width, height: image.height)
        var fresh = false
        if let encoder = lane.encoder, encoder.frameWidth != size.width || encoder.frameHeight != size.height {
            lane.encoder = nil
            feed.discard(rendition)
        }
        if lane.encoder == nil {
            let fps = max(1, min(sourceFPS(), rendition == .low ? settings.lowMaxFPS : 1000))
            lane.encoder = try H264Encoder(width: size.width, height: size.height, fps: fps,
                                           settings: rendition == .low ? settings.lowEncoder : settings.encoder)
            fresh = true
        }
        let now = clock.nanos()
        let force = lane.keyframePending
            && Double(now &- lane.lastForcedNanos) >= settings.forcedKeyframeGapSeconds * 1e9
        let picture = size.width == image.width && size.height == image.height
            ? image : try ImageOps.resized(image, width: size.width, height: size.height)
        let start = MonotonicClock.nanos()
        let encoded = try lane.encoder!.encode(picture, forceKeyframe: force && !fresh)
        let unit = try VideoAccessUnit(encoded: encoded, seq: frame.seq, sei: sei)
        let seconds = Double(MonotonicClock.nanos() &- start) / 1e9
        // A fresh encoder's first IDR and a forced one were asked for by a viewer.
        let requested = fresh || force
        if force || (fresh && encoded.isKeyframe) { lane.lastForcedNanos = now }
        if encoded.isKeyframe { lane.keyframePending = false }
        if rendition == .low {
            // At most lowMaxFPS on average whatever the source's rate: the next frame is due one
            // interval after this one was due (never sooner than half an interval after it), and
            // one up to 40 % of an interval early is taken; so 30 fps gives 15, and 20 fps gives
            // 15 too (three frames in four), not every other frame (10).
            let interval = UInt64(1e9 / settings.lowMaxFPS)
            let previous = lane.lowDueNanos == 0 ? frame.capturedNanos : lane.lowDueNanos
            lane.lowDueNanos = max(previous + interval, frame.capturedNanos + interval / 2)
        }
        lane.lastEncodedNanos = frame.capturedNanos
        var message = frame.message
        message.jpegBytes = nil
        message.video = unit.info
        let json = try message.jsonData()
        feed.publish(rendition, seq: frame.seq, capturedNanos: frame.capturedNanos, capturedAt: frame.capturedAt, json: json, data: unit.data,
                     isKeyframe: unit.isKeyframe, width: lane.encoder!.width, height: lane.encoder!.height)
        stats.encoded(rendition, seconds: seconds, bytes: unit.data.count, keyframe: unit.isKeyframe,
                      forced: requested && unit.isKeyframe)
    }

    /// `main`: the frame's size; `low`: `lowScale` of each side, even, at least 16x16.
    func pictureSize(_ rendition: VideoRendition, width: Int, height: Int) -> (width: Int, height: Int) {
        guard rendition == .low, settings.lowScale < 1 else { return (width, height) }
        let w = max(16, Int((Double(width) * settings.lowScale).rounded()) & ~1)
        let h = max(16, Int((Double(height) * settings.lowScale).rounded()) & ~1)
        return (min(w, width), min(h, height))
    }

    func finish() {
        for rendition in VideoRendition.allCases where lanes[rendition]!.encoder != nil {
            lanes[rendition]!.encoder = nil
            feed.discard(rendition)
        }
        encoding.value.store(false, ordering: .relaxed)
    }
}
