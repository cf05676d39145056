import Foundation
import Logging
import SightlineHTTP
import SightlinePipeline
import SightlineSupport

/// A `/ws?video=h264` or `?video=fmp4` viewer: each frame's JSON, then its
/// access unit (Annex B, or a fragmented MP4 fragment for Media Source
/// Extensions), never one without the other, paced by an `H264Viewer` (the
/// keyframe start, a joiner's catch-up, the jump ahead when it lags).
///
/// Service thread only (the server's `StreamSession`).
final class WebSocketVideoViewer: StreamSession {
    private var presence: CameraPresence
    private var camera: CameraFeed { presence.camera }
    private let feed: VideoFeed
    private let id: UInt64
    private let logger: Logger
    /// Its place in the video feed.
    private let viewer: H264Viewer
    /// `?video=fmp4`: its muxer (nil: Annex B units).
    private let fragmenter: FMP4Fragmenter?
    /// `?video=fmp4`: messages due before the next step (an init segment's
    /// notice and bytes, a frame's JSON), then the fragment of that frame.
    private var fmp4Queue: [(data: Data, binary: Bool)] = []
    private var fmp4Fragment = Data()

    /// Joins the video feed (which asks the sink for a keyframe) and bounds
    /// what its socket may hold unsent, so a slow link shows as lag here (see `H264Viewer`).
    init(_ socket: StreamSocket, camera: CameraFeed, feed: VideoFeed, pinned: VideoRendition?, fmp4: Bool, streams: CameraStreams) {
        presence = CameraPresence(camera: camera, feeds: streams.feeds)
        self.feed = feed
        id = socket.id
        logger = streams.logger
        fragmenter = fmp4 ? FMP4Fragmenter() : nil
        var policy = H264Viewer.Policy()
        policy.maxLag = streams.options.videoMaxLagSeconds
        policy.lowAvailable = streams.options.videoLowAvailable
        viewer = H264Viewer(format: pinned, policy: policy, feed: feed, now: MonotonicClock.nanos())
        camera.stats.clients(.webSocket, change: 1)
        camera.videoStats?.viewerJoined(id: id, rendition: viewer.rendition, pinned: pinned != nil)
        if !socket.limitUnsentBytes(streams.options.videoSocketBacklogBytes) {
            logger.info("cannot bound an H.264 viewer's socket backlog", metadata: ["errno": "\(errno)"])
        }
        socket.askWriteable()
    }

    /// Its socket calls back only once it has drained (TCP_NOTSENT_LOWAT): the viewer then takes what is due.
    func woken(_ socket: StreamSocket) {
        _ = presence.stillStreamed()
        socket.askWriteable()
    }

    /// The JSON of its next frame, or that frame's access unit.
    func writeable(_ socket: StreamSocket) -> Bool {
        if presence.removed {
            socket.setCloseReason(.goingAway, "this camera was removed")
            return false
        }
        let stats = camera.stats
        let videoStats = camera.videoStats
        if !fmp4Queue.isEmpty {
            let message = fmp4Queue.removeFirst()
            guard socket.write(message.data, as: message.binary ? .binary : .text) else { return false }
            socket.askWriteable()
            return true
        }
        let now = MonotonicClock.nanos()
        let (step, events) = viewer.step(feed, now: now)
        for event in events {
            switch event {
            case .skippedToKeyframe:
                videoStats?.viewerSkipped(id: id)
            case .moved(let from, let to):
                videoStats?.viewerMoved(id: id, to: to)
                logger.info("moved an H.264 viewer to another rendition",
                            metadata: ["from": "\(from.rawValue)", "to": "\(to.rawValue)", "peer": "\(socket.peer)"])
            }
        }
        switch step {
        case .wait:
            return true
        case .json(let unit):
            var json = unit.json
            if let fragmenter {
                do {
                    fmp4Queue = try Self.fmp4Messages(unit, fragmenter, fragment: &fmp4Fragment)
                } catch {
                    logger.error("cannot mux an fMP4 fragment; closing the viewer", metadata: ["error": "\(error)", "seq": "\(unit.seq)"])
                    return false
                }
                json = fmp4Queue.removeFirst().data
            }
            guard socket.write(json, as: .text) else { return false }
            socket.askWriteable()
            return true
        case .notice(let text):
            guard socket.write(text, as: .text) else { return false }
            socket.askWriteable()
            return true
        case .accessUnit(let unit):
            let data = fragmenter == nil ? unit.data : fmp4Fragment
            fmp4Fragment = Data()
            guard socket.write(data, as: .binary) else { return false }
            let sent = MonotonicClock.nanos()
            stats.stage(.send, seconds: Double(sent - now) / 1e9)
            // A joiner's catch-up units are seconds old by design: their age is not the stream's latency.
            stats.frameSent(seq: unit.seq, bytes: unit.json.count + data.count,
                            latencySeconds: viewer.isCatchingUp(unit.index) ? nil : Double(sent &- unit.capturedNanos) / 1e9)
            videoStats?.viewerSent(id: id, bytes: unit.json.count + data.count)
            if viewer.hasWork(feed) { socket.askWriteable() }
            return true
        }
    }

    func closed() {
        camera.stats.clients(.webSocket, change: -1)
        viewer.leave(feed)
        camera.videoStats?.viewerLeft(id: id)
    }

    /// Service thread: what a `?video=fmp4` viewer gets for `unit`, in order
    /// (docs/video.md, "Plain HTTP"): when the fragmenter starts an init segment,
    /// its notice `{"type":"fmp4Init","codec":...,"timescale":90000,"bytes":N,...}`
    /// and its bytes; then the frame's JSON with `"fmp4": {"pts": P, "bytes": M}`
    /// added. The fragment itself goes in `fragment`, sent as the frame's binary message.
    static func fmp4Messages(_ unit: VideoFeed.Unit, _ fragmenter: FMP4Fragmenter, fragment: inout Data) throws
        -> [(data: Data, binary: Bool)] {
        let out = try fragmenter.fragment(unit.data, isKeyframe: unit.isKeyframe, capturedNanos: unit.capturedNanos,
                                          width: unit.width, height: unit.height)
        var messages: [(data: Data, binary: Bool)] = []
        if let initSegment = out.initSegment {
            let notice = #"{"type":"fmp4Init","codec":"\#(out.codec ?? "")","timescale":\#(FMP4Fragmenter.timescale),"#
                + #""width":\#(unit.width),"height":\#(unit.height),"bytes":\#(initSegment.count)}"#
            messages.append((Data(notice.utf8), false))
            messages.append((initSegment, true))
        }
        var json = unit.json
        guard json.last == UInt8(ascii: "}") else { throw AVError(message: "frame \(unit.seq): its JSON is not an object") }
        json.removeLast()
        json.append(contentsOf: #","fmp4":{"pts":\#(out.pts),"bytes":\#(out.fragment.count)}}"#.utf8)
        messages.append((json, false))
        fragment = out.fragment
        return messages
    }

}
