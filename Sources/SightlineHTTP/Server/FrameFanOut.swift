import CSightlineLWS
import Foundation
import Logging
import SightlineVision
import SightlineSupport
import SightlinePipeline

/// Sends the newest frame to every streaming client whose socket can take
/// it: `/ws` viewers (each frame's JSON, then its JPEG at the size the viewer
/// takes, `JPEGSize`, which its camera's `JPEGViewers` count so the pipeline
/// makes it; or with `?video=h264`
/// the H.264 feed through an `H264Viewer`) and `/stream.mjpg` viewers (one
/// multipart part per frame), each from the camera it asked for (`CameraFeed`:
/// `/ws` the first, `/cam/NAME/ws` camera NAME). Each camera's pipeline leaves
/// frames in its slot and wakes the service thread, which asks each streaming client for a
/// writeable callback (`wakeStreamingClients`); a client that cannot keep
/// up is sent the newest frame when its socket drains, and the frames it
/// missed count as skipped. Streams whose credential was revoked end here
/// (`endRevokedStreams`, from the `RevocationWatch`'s finding).
///
/// Service thread only (owned by `CallbackDispatch`); the cameras' slots,
/// stats and video feeds guard their own state.
final class FrameFanOut {
    private let table: ConnectionTable
    private let cameras: CameraFeeds
    private let options: StreamServer.Options
    private let sessions: SessionStore?
    private let logger: Logger

    init(table: ConnectionTable, cameras: CameraFeeds, options: StreamServer.Options, sessions: SessionStore?, logger: Logger) {
        self.table = table
        self.cameras = cameras
        self.options = options
        self.sessions = sessions
        self.logger = logger
    }

    /// Service thread: a new frame is out: frames a client can no longer get (every one
    /// older than the newest that it was not sent) count as skipped now, so
    /// a stalled client's losses show even while it gets no callbacks.
    func wakeStreamingClients() {
        // Each camera's newest frame, read once per wake-up.
        let newest = Dictionary(uniqueKeysWithValues: cameras.all.map { ($0.name, $0.frames.latest) })
        for (wsi, connection) in table.all where connection.role != .http {
            if connection.video != nil {
                // Its socket calls back only once it has drained (TCP_NOTSENT_LOWAT): the viewer then takes what is due.
                lws_callback_on_writable(wsi)
                continue
            }
            guard let camera = connection.camera, let latest = newest[camera.name] ?? nil else { continue }
            if latest.index > connection.accountedThrough + 1 {
                camera.stats.clientSkipped(latest.index - 1 - connection.accountedThrough)
                connection.accountedThrough = latest.index - 1
            }
            if connection.lastFrameIndex < latest.index || connection.pendingBinary != nil {
                askWriteable(wsi, connection)
            }
        }
    }

    /// Service thread: a token was revoked (here or by `sightline token
    /// revoke`): streams opened with it end, each on its next writeable
    /// callback. The store was asked on the `RevocationWatch`'s thread; this
    /// only compares credentials.
    func endRevokedStreams(_ notice: RevocationNotice) {
        for (wsi, connection) in table.all where connection.role != .http && !connection.revoked {
            guard let credential = connection.credential,
                  notice.revokes(credential, checkedNanos: connection.credentialCheckedNanos) else { continue }
            connection.revoked = true
            sessions?.close(credentialNamed: credential.name)
            logger.notice("closing a stream whose token was revoked", metadata: ["token": "\(credential.name)"])
            askWriteable(wsi, connection)
        }
    }

    /// Service thread: cameras were removed at runtime: their streams end, each
    /// on its next writeable callback (WebSockets with 1001, going away).
    func endStreams(of removed: [CameraFeed]) {
        for (wsi, connection) in table.all where connection.role != .http && !connection.cameraRemoved {
            guard let camera = connection.camera, removed.contains(where: { $0.frames === camera.frames }) else { continue }
            connection.cameraRemoved = true
            askWriteable(wsi, connection)
        }
    }

    /// Service thread: a writeable callback for a stream; an MJPEG stream's
    /// reading is turned back on first, without which lws 4.1 gives none (see `DepartureWatch`).
    private func askWriteable(_ wsi: OpaquePointer, _ connection: Connection) {
        if connection.role == .mjpeg { DepartureWatch.resume(wsi) }
        lws_callback_on_writable(wsi)
    }

    /// Service thread.
    private func markSent(_ frame: EncodedFrame, to connection: Connection) {
        connection.lastFrameIndex = frame.index
        connection.accountedThrough = max(connection.accountedThrough, frame.index)
    }

    // MARK: - WebSocket

    /// Service thread (LWS_CALLBACK_ESTABLISHED): a `/ws` viewer, with what it brought to its upgrade.
    func webSocketEstablished(_ wsi: OpaquePointer) {
        let connection = Connection(role: .webSocket, id: table.takeID())
        let upgrade = table.upgrades.removeValue(forKey: wsi)
        let camera = upgrade?.camera ?? cameras.first
        connection.camera = camera
        connection.credential = upgrade?.credential
        connection.credentialCheckedNanos = upgrade?.credentialCheckedNanos ?? 0
        connection.accountedThrough = camera.frames.latest.map { $0.index - 1 } ?? 0
        table.add(connection, for: wsi)
        camera.stats.clients(.webSocket, change: 1)
        // Removed between the upgrade's check and now: it ends at once.
        if !cameras.contains(camera) {
            connection.cameraRemoved = true
            lws_callback_on_writable(wsi)
            return
        }
        if let wanted = upgrade?.format.video, let video = camera.video {
            if wanted.fmp4 { connection.fragmenter = FMP4Fragmenter() }
            startVideo(wsi, connection, pinned: wanted.pinned, feed: video)
        } else {
            startJPEG(connection, size: upgrade?.jpegSize ?? .stream)
            if camera.frames.latest?.send(connection.jpegSize ?? .stream) != nil { lws_callback_on_writable(wsi) }
        }
    }

    /// Service thread: a JPEG stream starts: its size is counted (the pipeline
    /// makes that JPEG from the next frame on). A newest frame made at no size
    /// it takes is not due to it, nor a skip.
    private func startJPEG(_ connection: Connection, size: JPEGSize) {
        guard let camera = connection.camera else { return }
        connection.jpegSize = size
        camera.frames.viewers.change(size, by: 1)
        if let latest = camera.frames.latest, latest.send(size) == nil { connection.accountedThrough = latest.index }
    }

    /// Service thread: a JPEG stream ended.
    private func endJPEG(_ connection: Connection) {
        guard let size = connection.jpegSize, let camera = connection.camera else { return }
        connection.jpegSize = nil
        camera.frames.viewers.change(size, by: -1)
    }

    /// Service thread (LWS_CALLBACK_SERVER_WRITEABLE): ends a revoked stream
    /// (1008), else sends what is due.
    func webSocketWriteable(_ wsi: OpaquePointer) -> Int32 {
        if table[wsi]?.revoked == true {
            var reason = Array("the credential of this stream was revoked".utf8)
            lws_close_reason(wsi, LWS_CLOSE_STATUS_POLICY_VIOLATION, &reason, reason.count)
            return -1
        }
        if table[wsi]?.cameraRemoved == true {
            var reason = Array("this camera was removed".utf8)
            lws_close_reason(wsi, LWS_CLOSE_STATUS_GOINGAWAY, &reason, reason.count)
            return -1
        }
        if let viewer = table[wsi]?.video, let video = table[wsi]?.camera?.video { return sendVideo(wsi, viewer, feed: video) }
        return sendWebSocket(wsi)
    }

    /// Service thread (LWS_CALLBACK_CLOSED).
    func webSocketClosed(_ wsi: OpaquePointer) {
        guard let connection = table.remove(wsi), let camera = connection.camera else { return }
        camera.stats.clients(.webSocket, change: -1)
        endJPEG(connection)
        if let viewer = connection.video, let video = camera.video {
            viewer.leave(video)
            camera.videoStats?.viewerLeft(id: connection.id)
        }
    }

    /// Service thread: counts a client's incoming message (clients only
    /// listen); one over `maxMessageBytes` closes it with 1009.
    func receiveWebSocket(_ wsi: OpaquePointer, length: Int) -> Int32 {
        guard let connection = table[wsi] else { return -1 }
        connection.incomingMessageBytes += length
        if connection.incomingMessageBytes > options.maxMessageBytes {
            let reason = "message over \(options.maxMessageBytes) bytes"
            var bytes = Array(reason.utf8)
            lws_close_reason(wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, &bytes, bytes.count)
            logger.notice("closing a WebSocket client", metadata: ["reason": "\(reason)", "peer": "\(RequestHeaders.peer(wsi))"])
            return -1
        }
        if lws_is_final_fragment(wsi) != 0 && lws_remaining_packet_payload(wsi) == 0 {
            connection.incomingMessageBytes = 0
        }
        return 0
    }

    /// Service thread: JSON first, then on the next writeable callback the JPEG
    /// of the same frame, both of the size the viewer takes. A frame published
    /// without that size (made before the viewer came) is not sent: the next one is.
    private func sendWebSocket(_ wsi: OpaquePointer) -> Int32 {
        guard let connection = table[wsi], let camera = connection.camera else { return -1 }
        let stats = camera.stats
        let size = connection.jpegSize ?? .stream
        if let frame = connection.pendingBinary {
            guard let pair = frame.send(size) else { return -1 }  // its JSON went out: never without its JPEG
            let start = MonotonicClock.nanos()
            guard ResponseWriter.write(wsi, pair.jpeg, LWS_WRITE_BINARY) else { return -1 }
            let now = MonotonicClock.nanos()
            stats.stage(.send, seconds: Double(now - start) / 1e9)
            stats.frameSent(seq: frame.seq, bytes: pair.json.count + pair.jpeg.count,
                            latencySeconds: Double(now &- frame.capturedNanos) / 1e9)
            connection.pendingBinary = nil
            if let latest = camera.frames.latest, latest.index > connection.lastFrameIndex { lws_callback_on_writable(wsi) }
            return 0
        }
        guard let frame = camera.frames.latest, frame.index > connection.lastFrameIndex,
              let pair = frame.send(size) else { return 0 }
        markSent(frame, to: connection)
        guard ResponseWriter.write(wsi, pair.json, LWS_WRITE_TEXT) else { return -1 }
        connection.pendingBinary = frame
        lws_callback_on_writable(wsi)
        return 0
    }

    /// Service thread (ESTABLISHED of a `?video=h264` client): joins the video
    /// feed (which asks the sink for a keyframe) and bounds what its socket may
    /// hold unsent, so a slow link shows as lag here (see `H264Viewer`).
    private func startVideo(_ wsi: OpaquePointer, _ connection: Connection, pinned: VideoRendition?, feed: VideoFeed) {
        var policy = H264Viewer.Policy()
        policy.maxLag = options.videoMaxLagSeconds
        policy.lowAvailable = options.videoLowAvailable
        connection.video = H264Viewer(format: pinned, policy: policy, feed: feed, now: MonotonicClock.nanos())
        connection.camera?.videoStats?.viewerJoined(id: connection.id, rendition: connection.video!.rendition, pinned: pinned != nil)
        var lowat = options.videoSocketBacklogBytes
        let fd = lws_get_socket_fd(wsi)
        if fd >= 0, setsockopt(fd, Int32(IPPROTO_TCP), Self.tcpNotsentLowat, &lowat, socklen_t(MemoryLayout<Int32>.size)) != 0 {
            logger.info("cannot bound an H.264 viewer's socket backlog", metadata: ["errno": "\(errno)"])
        }
        lws_callback_on_writable(wsi)
    }

    /// Linux's TCP_NOTSENT_LOWAT (netinet/tcp.h), which Glibc's Swift module does not export.
    static let tcpNotsentLowat: Int32 = 25

    /// Service thread: an H.264 viewer's socket can take more: the JSON of its
    /// next frame, or that frame's access unit (never one without the other).
    private func sendVideo(_ wsi: OpaquePointer, _ viewer: H264Viewer, feed: VideoFeed) -> Int32 {
        guard let connection = table[wsi], let camera = connection.camera else { return -1 }
        let stats = camera.stats
        let videoStats = camera.videoStats
        if !connection.fmp4Queue.isEmpty {
            let message = connection.fmp4Queue.removeFirst()
            guard ResponseWriter.write(wsi, message.data, message.binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT) else { return -1 }
            lws_callback_on_writable(wsi)
            return 0
        }
        let now = MonotonicClock.nanos()
        let (step, events) = viewer.step(feed, now: now)
        for event in events {
            switch event {
            case .skippedToKeyframe:
                videoStats?.viewerSkipped(id: connection.id)
            case .moved(let from, let to):
                videoStats?.viewerMoved(id: connection.id, to: to)
                logger.info("moved an H.264 viewer to another rendition",
                            metadata: ["from": "\(from.rawValue)", "to": "\(to.rawValue)", "peer": "\(RequestHeaders.peer(wsi))"])
            }
        }
        switch step {
        case .wait:
            return 0
        case .json(let unit):
            var json = unit.json
            if let fragmenter = connection.fragmenter {
                do {
                    connection.fmp4Queue = try Self.fmp4Messages(unit, fragmenter, fragment: &connection.fmp4Fragment)
                } catch {
                    logger.error("cannot mux an fMP4 fragment; closing the viewer", metadata: ["error": "\(error)", "seq": "\(unit.seq)"])
                    return -1
                }
                json = connection.fmp4Queue.removeFirst().data
            }
            guard ResponseWriter.write(wsi, json, LWS_WRITE_TEXT) else { return -1 }
            lws_callback_on_writable(wsi)
            return 0
        case .notice(let text):
            guard ResponseWriter.write(wsi, text, LWS_WRITE_TEXT) else { return -1 }
            lws_callback_on_writable(wsi)
            return 0
        case .accessUnit(let unit):
            let data = connection.fragmenter == nil ? unit.data : connection.fmp4Fragment
            connection.fmp4Fragment = Data()
            guard ResponseWriter.write(wsi, data, LWS_WRITE_BINARY) else { return -1 }
            let sent = MonotonicClock.nanos()
            stats.stage(.send, seconds: Double(sent - now) / 1e9)
            // A joiner's catch-up units are seconds old by design: their age is not the stream's latency.
            stats.frameSent(seq: unit.seq, bytes: unit.json.count + data.count,
                            latencySeconds: viewer.isCatchingUp(unit.index) ? nil : Double(sent &- unit.capturedNanos) / 1e9)
            videoStats?.viewerSent(id: connection.id, bytes: unit.json.count + data.count)
            if viewer.hasWork(feed) { lws_callback_on_writable(wsi) }
            return 0
        }
    }

    /// Service thread: what a `?video=fmp4` viewer gets for `unit`, in order
    /// (the README's H.264 section): when the fragmenter starts an init segment,
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

    // MARK: - MJPEG

    /// Service thread: an MJPEG answer's head is out; the connection is a
    /// stream from now on, under the credential its request presented.
    func startMJPEG(_ wsi: OpaquePointer, _ connection: Connection, size: JPEGSize) {
        // nil: a camera removed since its route answered; the stream ends at once.
        let found = cameras.feed(forPath: connection.requestPath)?.feed
        let camera = found ?? cameras.first
        connection.role = .mjpeg
        connection.camera = camera
        connection.cameraRemoved = found == nil
        connection.credential = connection.streamCredential
        connection.accountedThrough = camera.frames.latest.map { $0.index - 1 } ?? 0
        camera.stats.clients(.mjpeg, change: 1)
        startJPEG(connection, size: size)
        // lws would not notice the client leave (see DepartureWatch).
        DepartureWatch.start(wsi)
        lws_callback_on_writable(wsi)
    }

    /// Service thread: the newest frame as one MJPEG part, if the client has not had it.
    func sendMJPEGPart(_ wsi: OpaquePointer, _ connection: Connection) -> Int32 {
        // libwebsockets arms its content timeout (requestTimeoutSeconds) when
        // the LWS_CALLBACK_HTTP that started this stream returns, and closed
        // every stream 5 s in: a stream has no end, so it has no timeout. The
        // first call comes on the writeable callback `startMJPEG` asked for, after that.
        lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0)
        guard let camera = connection.camera else { return -1 }
        // A frame published without this stream's size (made before it came) is not sent: the next one is.
        guard let frame = camera.frames.latest, frame.index > connection.lastFrameIndex,
              let jpeg = frame.send(connection.jpegSize ?? .stream)?.jpeg else {
            pauseIfSent(wsi)
            return 0
        }
        if lws_send_pipe_choked(wsi) != 0 { return 0 }
        markSent(frame, to: connection)
        var part = Data(MJPEG.partHead(length: jpeg.count, seq: frame.seq, capturedAt: frame.capturedAt).utf8)
        part.append(jpeg)
        part.append(contentsOf: [13, 10])
        guard ResponseWriter.write(wsi, part, LWS_WRITE_HTTP) else { return -1 }
        camera.stats.frameSent(seq: frame.seq, bytes: part.count,
                        latencySeconds: Double(MonotonicClock.nanos() &- frame.capturedNanos) / 1e9)
        // Until the next frame (wakeStreamingClients resumes it), unless lws still holds part of this one.
        pauseIfSent(wsi)
        return 0
    }

    /// Service thread: an MJPEG stream with nothing left to send stops reading (see `DepartureWatch`).
    private func pauseIfSent(_ wsi: OpaquePointer) {
        if lws_send_pipe_choked(wsi) == 0 { DepartureWatch.pause(wsi) }
    }

    /// Service thread (LWS_CALLBACK_CLOSED_HTTP of a connection that was an MJPEG stream, or any HTTP one).
    func httpClosed(_ connection: Connection) {
        if connection.role == .mjpeg {
            connection.camera?.stats.clients(.mjpeg, change: -1)
            endJPEG(connection)
        }
    }
}
