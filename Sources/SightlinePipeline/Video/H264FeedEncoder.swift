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
    /// Main's frames kept instead of encoded while only deferring holds consume
    /// it (the clip recorder between events): an MJPEG source's own JPEGs, or
    /// for a source with no encoding of its own (raw, the demo) each frame's
    /// full-size JPEG made here (`keptUnit`), with each frame's boxes but not
    /// its pixels, oldest first. Encoded, oldest first from an IDR, once main
    /// must be live (`VideoFeed.liveDemand`).
    private var deferred: [ProcessedFrame] = []
    private var deferredBytes = 0
    private lazy var jpegDecoder: JPEGDecoder? = try? JPEGDecoder()
    private lazy var jpegEncoder: JPEGEncoder? = try? JPEGEncoder(quality: Self.keptQuality)
    /// The quality a raw frame is kept at between events (it is encoded
    /// again, as H.264, only if an event wants it).
    static let keptQuality = 90
    /// Kept frames beyond this many bytes go first (a bound, about 64 MB).
    static let maxDeferredBytes = 64 << 20

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
        // The pixels are converted only for a rendition that is encoded (`FramePicture`).
        guard let picture = frame.picture else { return }
        var sei: Data?
        var published = false
        let passedOn = relay?.isActive ?? false
        for rendition in VideoRendition.allCases {
            let demand = feed.demand(rendition)
            var lane = lanes[rendition]!
            defer { lanes[rendition] = lane }
            if demand.keyframeWanted { lane.keyframePending = true }
            if rendition == .main, !passedOn, demand.viewers > 0 {
                let live = feed.liveDemand(.main)
                if !live.live, live.keepSeconds > 0, let unit = keptUnit(frame) {
                    keep(frame, unit: unit, seconds: live.keepSeconds)
                    if lane.encoder != nil {
                        lane.encoder = nil
                        feed.discard(.main)
                    }
                    lane.keyframePending = false
                    continue
                }
                if !deferred.isEmpty {
                    // Main is wanted live now: what was kept goes first, from an IDR, a little each
                    // frame (this one joins the end), so no frame is lost while the encoder catches up.
                    if let unit = keptUnit(frame) {
                        keep(frame, unit: unit, seconds: .infinity)
                    } else {
                        deferred.removeAll()   // the source changed: what was kept does not continue
                        deferredBytes = 0
                    }
                    if !deferred.isEmpty {
                        published = encodeKept(lane: &lane) || published
                        continue
                    }
                }
            }
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
                try encode(frame, picture: picture, sei: sei!, rendition: rendition, lane: &lane)
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

    private func encode(_ frame: ProcessedFrame, picture source: FramePicture, sei: Data, rendition: VideoRendition,
                        lane: inout Lane) throws {
        let size = pictureSize(rendition, width: source.width, height: source.height)
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
        // A smaller rendition (`low`) of a picture still in its decoded form is
        // converted straight at its size.
        let picture = size.width == source.width && size.height == source.height ? source.image
            : try source.scaledFromSource(width: size.width, height: size.height)
                ?? ImageOps.resized(source.image, width: size.width, height: size.height)
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

    /// What `frame` is kept as between events: an MJPEG source's own JPEG; for
    /// a frame with no encoding of its own (raw, the demo) a JPEG of its full
    /// picture at `keptQuality`, about a third of an x264 encode's time
    /// (`vtest.avi`, MPEG-4 768x576 at 10 fps, no event: the process 0.057
    /// cores against 0.105 while the encoder ran all the time); nil for an
    /// H.264 source encoded here (B-frames), which is encoded.
    private func keptUnit(_ frame: ProcessedFrame) -> SourceUnit? {
        if let unit = frame.sourceUnit { return unit.codec == .mjpeg ? unit : nil }
        guard let encoder = jpegEncoder, let pixels = frame.picture?.image,
              let data = try? encoder.encode(pixels) else { return nil }
        return SourceUnit(codec: .mjpeg, data: data, isKeyframe: true)
    }

    /// Keeps `frame` for main as its source's JPEG and its boxes (no pixels), dropping what is older than `seconds`.
    private func keep(_ frame: ProcessedFrame, unit: SourceUnit, seconds: Double) {
        deferred.append(ProcessedFrame(seq: frame.seq, capturedAt: frame.capturedAt, capturedNanos: frame.capturedNanos,
                                       width: frame.width, height: frame.height, jpeg: FrameJPEG(encoded: unit.data),
                                       detections: frame.detections, groundTruth: frame.groundTruth, sourceUnit: unit))
        deferredBytes += unit.data.count
        let horizon = frame.capturedNanos &- UInt64(min(seconds, 3600) * 1e9)
        while let first = deferred.first, deferred.count > 1,
              (seconds.isFinite && first.capturedNanos < horizon) || deferredBytes > Self.maxDeferredBytes {
            deferredBytes -= first.sourceUnit?.data.count ?? 0
            deferred.removeFirst()
        }
    }

    /// Encodes kept frames from the oldest for about half a frame interval (one at least); true when any went out.
    private func encodeKept(lane: inout Lane) -> Bool {
        let budget = UInt64(0.5e9 / max(1, sourceFPS()))
        let start = MonotonicClock.nanos()
        var published = false
        while let first = deferred.first {
            deferred.removeFirst()
            deferredBytes -= first.sourceUnit?.data.count ?? 0
            do {
                guard let decoder = jpegDecoder, let data = first.sourceUnit?.data else { throw SourceError.unsupported("no JPEG decoder") }
                let image = try decoder.decode(data)
                let sei = try SEIBoxes.nalUnit(for: SEIBoxes.Payload(frame: first))
                try encode(first, picture: FramePicture(image), sei: sei, rendition: .main, lane: &lane)
                published = true
            } catch {
                // A kept frame that cannot be decoded or encoded: the next must start a new picture chain.
                stats.encodeFailed(.main)
                if lane.encoder != nil { feed.discard(.main) }
                lane.encoder = nil
            }
            if MonotonicClock.nanos() &- start >= budget { break }
        }
        return published
    }

    /// `main`: the frame's size; `low`: `lowScale` of each side, even, at least 16x16.
    func pictureSize(_ rendition: VideoRendition, width: Int, height: Int) -> (width: Int, height: Int) {
        guard rendition == .low, settings.lowScale < 1 else { return (width, height) }
        let w = max(16, Int((Double(width) * settings.lowScale).rounded()) & ~1)
        let h = max(16, Int((Double(height) * settings.lowScale).rounded()) & ~1)
        return (min(w, width), min(h, height))
    }

    func finish() {
        deferred.removeAll()
        for rendition in VideoRendition.allCases where lanes[rendition]!.encoder != nil {
            lanes[rendition]!.encoder = nil
            feed.discard(rendition)
        }
        encoding.value.store(false, ordering: .relaxed)
    }
}
