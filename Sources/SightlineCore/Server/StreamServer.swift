import CSightlineLWS
import Foundation
import Logging
import Synchronization

/// The libwebsockets server: static files, the JSON API, /ws, /stream.mjpg
/// and /snapshot.jpg, all on one service thread.
///
/// Threads (after libwebsockets' minimal-ws-server-threads): the pipeline
/// publishes into `frames` under that slot's lock and calls `wake()`, which
/// is `lws_cancel_service`; the service thread answers
/// LWS_CALLBACK_EVENT_WAIT_CANCELLED by asking each streaming client for a
/// writeable callback, and sends it the newest frame when its socket can
/// take it. HTTP requests go through the `Router`: quick routes answer on
/// the service thread, slow ones run on the `RequestWorker`, whose answers
/// come back through `completed` and the same wake-up.
///
/// `@unchecked Sendable`: `connections`, `connectionsByID`, `nextID` and
/// everything in `Connection` are touched only on the service thread
/// (`sightline.lws`, inside `callback`); `control` (the context handle for
/// waking, and stopping) and `completed` are `Mutex`es; `boundPort` is set
/// in `start` before the service thread runs and only read afterwards.
public final class StreamServer: @unchecked Sendable {
    public struct Options: Sendable {
        public var host = "127.0.0.1"
        public var port = 8080
        /// Largest HTTP request body (uploads).
        public var maxBodyBytes = 8 << 20
        /// Largest WebSocket message a client may send.
        public var maxMessageBytes = 64 << 10
        /// Bytes written per writeable callback for plain HTTP bodies.
        public var chunkBytes = 64 << 10
        /// HTTPS and WSS from these PEM files (nil: plain HTTP).
        public var tls: TLSFiles?
        /// Connections one address may have open that have not finished
        /// their request headers: more are closed at once, so idle sockets
        /// from one place cannot take the header buffers everyone needs.
        public var maxUnfinishedPerAddress = 16
        /// Connections in all that may be unfinished at once: one more evicts
        /// the oldest (its socket is shut down), so idle sockets from many
        /// addresses can never take every header buffer and lock out someone
        /// new; a real client sends its headers within milliseconds of
        /// connecting and is never the oldest for long.
        public var maxUnfinished = 256
        /// libwebsockets' header buffers (16 KiB each, made as needed): the
        /// unfinished connections' share plus streams and uploads in progress,
        /// which hold theirs until they end.
        public var headerPool = 1024
        /// Seconds a client has to send its request headers, and each piece
        /// of its body (libwebsockets' own timeout).
        public var requestTimeoutSeconds = 5
        /// Seconds a request may wait for the worker's answer (queue and
        /// job); lws's content timeout, which would close it after
        /// `requestTimeoutSeconds`, is replaced by this meanwhile.
        public var workerWaitSeconds = 120
        /// H.264 viewers: moved ahead to a keyframe past this lag; whether the low rendition exists.
        public var videoMaxLagSeconds = 0.5
        public var videoLowAvailable = true
        /// Bytes not yet sent that an H.264 viewer's socket may hold (TCP_NOTSENT_LOWAT):
        /// beyond it the socket is not writeable, so a slow link's backlog stays
        /// here, where the viewer can be moved ahead, not in the kernel.
        public var videoSocketBacklogBytes: Int32 = 32 << 10
        public init() {}
    }

    public let options: Options
    private let frames: LatestFrameSlot
    /// The H.264 sink's access units and the figures about them (nil: H.264 is off).
    private let video: VideoFeed?
    private let videoStats: VideoStats?
    private let stats: PipelineStats
    private let router: Router
    private let worker: RequestWorker
    /// Host, Origin and credential checks that come before routing (nil: none).
    private let access: AuthGuard?
    private let logger: Logger
    private let pre = Int(sl_lws_pre())

    /// The lws context while it may be woken: lws_cancel_service is safe from
    /// any thread, but not after the context is destroyed, so waking and
    /// stopping go through this lock.
    private struct Control { var context: ContextHandle?; var stopping = false }
    private let control = Mutex(Control())
    /// Answers from the worker, by connection id, for the service thread to send.
    private let completed = Mutex<[(id: UInt64, response: HTTPResponse)]>([])
    /// When the service thread last woke for a frame or an answer (written there, read by the watchdog).
    private let serviceWokeNanos = Atomic<UInt64>(0)
    /// Set by `reloadCertificate` (any thread), acted on by the service thread.
    private let reloadRequested = Mutex(false)

    private var connections: [OpaquePointer: Connection] = [:] // service thread
    private var connectionsByID: [UInt64: OpaquePointer] = [:] // service thread
    private var nextID: UInt64 = 1                              // service thread
    /// Credentials of WebSockets between their upgrade and ESTABLISHED.
    private var upgradingCredentials: [OpaquePointer: Credential] = [:] // service thread
    /// What WebSockets between their upgrade and ESTABLISHED asked for (`?video=`).
    private var upgradingFormats: [OpaquePointer: StreamFormat] = [:] // service thread
    /// Connections that have not finished their headers: address and admission order by socket, and count by address.
    private var unfinished: [Int32: (address: String, order: UInt64)] = [:] // service thread
    private var unfinishedCount: [String: Int] = [:]             // service thread
    private var admissions: UInt64 = 0                           // service thread
    /// The token store's revocation count when the streams were last checked.
    private var checkedRevocations: UInt64 = 0                 // service thread
    /// When the token store was last asked (it stats tokens.json): at most every `revocationCheckNanos`.
    private var revocationsCheckedNanos: UInt64 = 0            // service thread
    static let revocationCheckNanos: UInt64 = 250_000_000
    private let finished = DispatchSemaphore(value: 0)
    public private(set) var boundPort = 0

    public init(options: Options, frames: LatestFrameSlot, stats: PipelineStats, logger: Logger, router: Router,
                worker: RequestWorker = RequestWorker(), access: AuthGuard? = nil,
                video: (feed: VideoFeed, stats: VideoStats)? = nil) {
        self.access = access
        self.video = video?.feed
        self.videoStats = video?.stats
        self.options = options
        self.frames = frames
        self.stats = stats
        self.logger = logger
        self.router = router
        self.worker = worker
    }

    /// Any thread (from the stats' lock).
    public var clientCounts: (webSocket: Int, mjpeg: Int) {
        let snapshot = stats.snapshot()
        return (snapshot.webSocketClients, snapshot.mjpegClients)
    }

    /// Main thread (once): binds, starts the worker and the service thread.
    /// Throws when the port cannot be bound.
    public func start() throws {
        // SIGHTLINE_LWS_LOG: libwebsockets' log levels as its bit mask (1 error, 2 warn,
        // 4 notice, 8 info), for diagnosing a connection; errors only by default.
        let lwsLevels = ProcessInfo.processInfo.environment["SIGHTLINE_LWS_LOG"].flatMap { Int32($0) } ?? Int32(LLL_ERR)
        sl_lws_set_logging(lwsLevels, lwsLogEntry)
        let descriptors = Self.raiseOpenFileLimit()
        logger.info("connections: up to about \(max(0, descriptors - 64)) at once (RLIMIT_NOFILE \(descriptors), less the process's own files); \(options.maxUnfinishedPerAddress) unfinished per address")
        var port: Int32 = 0
        var protocols: UnsafeMutableRawPointer?
        let me = Unmanaged.passUnretained(self).toOpaque()
        guard let context = sl_lws_create_context(options.host, Int32(options.port), lwsCallbackEntry,
                                                  options.maxMessageBytes, me, options.tls?.certificate,
                                                  options.tls?.privateKey, Int32(options.requestTimeoutSeconds),
                                                  Int32(options.headerPool), &port, &protocols) else {
            throw ServerError.cannotListen("cannot listen on \(options.host):\(options.port) (in use, or not an address of this machine)")
        }
        boundPort = Int(port)
        let handle = ContextHandle(pointer: context, protocols: protocols)
        control.withLock { $0.context = handle }
        worker.start()
        let thread = Thread { [self] in
            Thread.setOSName("sightline.lws")
            serviceLoop(handle)
        }
        thread.name = "sightline.lws"
        thread.start()
    }

    /// Any thread: whether the service thread answered a wake-up (every new
    /// frame sends one) within the last `seconds`. A service thread stuck in
    /// a loop stops the watchdog's pings as a stalled source does.
    public func serviceResponsive(within seconds: Double) -> Bool {
        MonotonicClock.happened(serviceWokeNanos.load(ordering: .relaxed), within: seconds)
    }

    /// Any thread: a new frame or a worker's answer is ready.
    public func wake() {
        control.withLock { control in
            if let context = control.context, !control.stopping { lws_cancel_service(context.pointer) }
        }
    }

    /// Any thread: read the certificate files again (a renewed certificate)
    /// and use them for new connections; open ones keep theirs. Done on the
    /// service thread at its next wake-up.
    public func reloadCertificate() {
        reloadRequested.withLock { $0 = true }
        wake()
    }

    /// Service thread.
    private func reloadCertificateIfAsked(_ wsi: OpaquePointer) {
        guard reloadRequested.withLock({ requested -> Bool in defer { requested = false }; return requested }),
              let tls = options.tls, let context = lws_get_context(wsi) else { return }
        do {
            try tls.validate()
            let certificate = try Data(contentsOf: URL(fileURLWithPath: tls.certificate))
            let key = try Data(contentsOf: URL(fileURLWithPath: tls.privateKey))
            let status = certificate.withUnsafeBytes { c in
                key.withUnsafeBytes { k in
                    lws_tls_cert_updated(context, tls.certificate, tls.privateKey,
                                         c.baseAddress?.assumingMemoryBound(to: CChar.self), certificate.count,
                                         k.baseAddress?.assumingMemoryBound(to: CChar.self), key.count)
                }
            }
            if status == 0 {
                logger.notice("certificate reloaded", metadata: ["fingerprint": "\((try? tls.fingerprintSHA256()) ?? "?")"])
            } else {
                logger.error("the new certificate was not taken; the old one stays", metadata: ["status": "\(status)"])
            }
        } catch {
            logger.error("cannot reload the certificate; the old one stays", metadata: ["error": "\(error)"])
        }
    }

    /// Main thread: finishes the worker's jobs, then ends the service thread,
    /// which destroys the context. No wake reaches it after this returns.
    public func stop() {
        worker.stop()
        let running = control.withLock { control -> Bool in
            guard let context = control.context, !control.stopping else { return false }
            control.stopping = true
            lws_cancel_service(context.pointer)
            return true
        }
        guard running else { return }
        finished.wait()
    }

    /// Service thread: runs until `stop`, or until lws fails. Either way the
    /// context is taken out of `control` before it is destroyed, so a `wake`
    /// from another thread never reaches a destroyed context.
    private func serviceLoop(_ handle: ContextHandle) {
        let context = handle.pointer
        while !control.withLock({ $0.stopping }) {
            if lws_service(context, 0) < 0 {
                logger.error("libwebsockets stopped serving")
                break
            }
        }
        control.withLock { control in
            control.stopping = true
            control.context = nil
        }
        lws_context_destroy(context)
        free(handle.protocols)  // lws keeps using the protocols array until the context is gone
        finished.signal()
    }

    // MARK: - Callback dispatch (service thread)

    /// Service thread: every lws callback, by reason.
    fileprivate func callback(_ wsi: OpaquePointer, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
                              _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
        switch reason {
        case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
            serviceWokeNanos.store(MonotonicClock.nanos(), ordering: .relaxed)
            reloadCertificateIfAsked(wsi)
            deliverCompleted()
            wakeStreamingClients()
            return 0
        case LWS_CALLBACK_FILTER_NETWORK_CONNECTION:
            return admitConnection(user)
        case LWS_CALLBACK_WSI_CREATE:
            // Before its socket is set: the first look at whether its headers stalled.
            lws_set_timer_usecs(wsi, Self.stalledHeadersMillis * 1000)
            return 0
        case LWS_CALLBACK_TIMER:
            return answerStalledHeaders(wsi)
        case LWS_CALLBACK_WSI_DESTROY:
            headersFinished(wsi)
            return 0
        case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
            return requestPath(wsi) == "/ws" ? 0 : 1
        case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
            headersFinished(wsi)
            let upgrade = input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? ""
            return upgrade == "websocket" ? confirmWebSocket(wsi) : answerWithoutUpgrade(wsi)
        case LWS_CALLBACK_ESTABLISHED:
            let connection = Connection(role: .webSocket, id: takeID())
            connection.credential = upgradingCredentials.removeValue(forKey: wsi)
            connection.accountedThrough = frames.latest.map { $0.index - 1 } ?? 0
            connections[wsi] = connection
            stats.clients(.webSocket, change: 1)
            if case .h264(let pinned)? = upgradingFormats.removeValue(forKey: wsi), let video {
                startVideo(wsi, connection, pinned: pinned, feed: video)
            } else if frames.latest != nil {
                lws_callback_on_writable(wsi)
            }
            return 0
        case LWS_CALLBACK_RECEIVE:
            return receiveWebSocket(wsi, length: length)
        case LWS_CALLBACK_SERVER_WRITEABLE:
            if connections[wsi]?.revoked == true {
                var reason = Array("the credential of this stream was revoked".utf8)
                lws_close_reason(wsi, LWS_CLOSE_STATUS_POLICY_VIOLATION, &reason, reason.count)
                return -1
            }
            if let viewer = connections[wsi]?.video, let video { return sendVideo(wsi, viewer, feed: video) }
            return sendWebSocket(wsi)
        case LWS_CALLBACK_CLOSED:
            upgradingCredentials.removeValue(forKey: wsi)
            upgradingFormats.removeValue(forKey: wsi)
            if let connection = connections.removeValue(forKey: wsi) {
                connectionsByID.removeValue(forKey: connection.id)
                stats.clients(.webSocket, change: -1)
                if let viewer = connection.video, let video {
                    viewer.leave(video)
                    videoStats?.viewerLeft(id: connection.id)
                }
            }
            return 0
        case LWS_CALLBACK_HTTP:
            headersFinished(wsi)
            let path = input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? "/"
            return beginHTTP(wsi, path: path)
        case LWS_CALLBACK_HTTP_BODY:
            return receiveBody(wsi, input, length)
        case LWS_CALLBACK_HTTP_BODY_COMPLETION:
            guard let connection = connections[wsi] else { return 0 }
            if connection.bodyCompleted {
                // A second end of the same body: the client pipelined more
                // bytes behind a body whose answer is not out yet (the
                // worker's, a long body, a stream). libwebsockets 4.1 offers
                // those bytes as the end of the body again and again, in a
                // loop that never returns to poll (see beginHTTP): close now.
                logger.info("closing a connection that sent a request behind a body before its answer",
                            metadata: ["peer": "\(peer(wsi))"])
                return -1
            }
            connection.bodyCompleted = true
            // Nothing pending: an empty body already answered in LWS_CALLBACK_HTTP.
            guard var request = connection.request else { return 0 }
            connection.request = nil
            if let form = connection.form {
                connection.form = nil
                switch form.finish() {
                case .success(let parsed): request.form = parsed
                case .failure(let problem): return respond(wsi, connection, problem.response)
                }
            }
            return dispatch(wsi, connection, request)
        case LWS_CALLBACK_HTTP_WRITEABLE:
            guard let connection = connections[wsi] else { return 0 }
            if connection.revoked { return -1 }
            if let answer = connection.pendingAnswer {
                connection.pendingAnswer = nil
                return respond(wsi, connection, answer)
            }
            if connection.awaitingWorker {
                // Asked for in `dispatch`, so this runs after lws armed its
                // content timeout for a request without a body (at the end of
                // its LWS_CALLBACK_HTTP handling): the worker's time is not
                // the client's, so wait for the answer up to workerWaitSeconds.
                lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, Int32(options.workerWaitSeconds))
                return 0
            }
            return connection.role == .mjpeg ? sendMJPEGPart(wsi, connection) : writeBody(wsi, connection)
        case LWS_CALLBACK_CLOSED_HTTP:
            upgradingCredentials.removeValue(forKey: wsi)
            upgradingFormats.removeValue(forKey: wsi)
            if let connection = connections.removeValue(forKey: wsi) {
                connectionsByID.removeValue(forKey: connection.id)
                connection.form = nil
                if connection.role == .mjpeg { stats.clients(.mjpeg, change: -1) }
            }
            return 0
        default:
            return lws_callback_http_dummy(wsi, reason, user, input, length)
        }
    }

    /// Service thread: a new frame is out: frames a client can no longer get (every one
    /// older than the newest that it was not sent) count as skipped now, so
    /// a stalled client's losses show even while it gets no callbacks.
    private func wakeStreamingClients() {
        endRevokedStreams()
        guard let latest = frames.latest else {
            for (wsi, connection) in connections where connection.video != nil { lws_callback_on_writable(wsi) }
            return
        }
        for (wsi, connection) in connections where connection.role != .http {
            if connection.video != nil {
                // Its socket calls back only once it has drained (TCP_NOTSENT_LOWAT): the viewer then takes what is due.
                lws_callback_on_writable(wsi)
                continue
            }
            if latest.index > connection.accountedThrough + 1 {
                stats.clientSkipped(latest.index - 1 - connection.accountedThrough)
                connection.accountedThrough = latest.index - 1
            }
            if connection.lastFrameIndex < latest.index || connection.pendingBinary != nil {
                lws_callback_on_writable(wsi)
            }
        }
    }

    /// Service thread: when a token was revoked (here or by `sightline token
    /// revoke`, seen through the store's file), streams opened with it end.
    private func endRevokedStreams() {
        guard let tokens = access?.tokens else { return }
        // Every wake is a frame (JPEG and H.264 each wake it): asking the store, which stats
        // its file, four times a second is soon enough to end a revoked stream.
        let now = MonotonicClock.nanos()
        guard now &- revocationsCheckedNanos >= Self.revocationCheckNanos else { return }
        revocationsCheckedNanos = now
        let revocations = tokens.revocations
        guard revocations != checkedRevocations else { return }
        checkedRevocations = revocations
        for (wsi, connection) in connections where connection.role != .http {
            guard let credential = connection.credential, !tokens.isValid(credential) else { continue }
            connection.revoked = true
            access?.sessions.close(credentialNamed: credential.name)
            logger.notice("closing a stream whose token was revoked", metadata: ["token": "\(credential.name)"])
            lws_callback_on_writable(wsi)
        }
    }

    /// Service thread.
    private func markSent(_ frame: EncodedFrame, to connection: Connection) {
        connection.lastFrameIndex = frame.index
        connection.accountedThrough = max(connection.accountedThrough, frame.index)
    }

    // MARK: - WebSocket

    /// Service thread: counts a client's incoming message (clients only
    /// listen); one over `maxMessageBytes` closes it with 1009.
    private func receiveWebSocket(_ wsi: OpaquePointer, length: Int) -> Int32 {
        guard let connection = connections[wsi] else { return -1 }
        connection.incomingMessageBytes += length
        if connection.incomingMessageBytes > options.maxMessageBytes {
            let reason = "message over \(options.maxMessageBytes) bytes"
            var bytes = Array(reason.utf8)
            lws_close_reason(wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, &bytes, bytes.count)
            logger.notice("closing a WebSocket client", metadata: ["reason": "\(reason)", "peer": "\(peer(wsi))"])
            return -1
        }
        if lws_is_final_fragment(wsi) != 0 && lws_remaining_packet_payload(wsi) == 0 {
            connection.incomingMessageBytes = 0
        }
        return 0
    }

    /// Service thread: JSON first, then on the next writeable callback the JPEG of the same frame.
    private func sendWebSocket(_ wsi: OpaquePointer) -> Int32 {
        guard let connection = connections[wsi] else { return -1 }
        if let frame = connection.pendingBinary {
            let start = MonotonicClock.nanos()
            guard write(wsi, frame.jpeg, LWS_WRITE_BINARY) else { return -1 }
            let now = MonotonicClock.nanos()
            stats.stage(.send, seconds: Double(now - start) / 1e9)
            stats.frameSent(seq: frame.seq, bytes: frame.json.count + frame.jpeg.count,
                            latencySeconds: Double(now &- frame.capturedNanos) / 1e9)
            connection.pendingBinary = nil
            if let latest = frames.latest, latest.index > connection.lastFrameIndex { lws_callback_on_writable(wsi) }
            return 0
        }
        guard let frame = frames.latest, frame.index > connection.lastFrameIndex else { return 0 }
        markSent(frame, to: connection)
        guard write(wsi, frame.json, LWS_WRITE_TEXT) else { return -1 }
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
        videoStats?.viewerJoined(id: connection.id, rendition: connection.video!.rendition, pinned: pinned != nil)
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
        guard let connection = connections[wsi] else { return -1 }
        let now = MonotonicClock.nanos()
        let (step, events) = viewer.step(feed, now: now)
        for event in events {
            switch event {
            case .skippedToKeyframe:
                videoStats?.viewerSkipped(id: connection.id)
            case .moved(let from, let to):
                videoStats?.viewerMoved(id: connection.id, to: to)
                logger.info("moved an H.264 viewer to another rendition",
                            metadata: ["from": "\(from.rawValue)", "to": "\(to.rawValue)", "peer": "\(peer(wsi))"])
            }
        }
        switch step {
        case .wait:
            return 0
        case .json(let unit):
            guard write(wsi, unit.json, LWS_WRITE_TEXT) else { return -1 }
            lws_callback_on_writable(wsi)
            return 0
        case .accessUnit(let unit):
            guard write(wsi, unit.data, LWS_WRITE_BINARY) else { return -1 }
            let sent = MonotonicClock.nanos()
            stats.stage(.send, seconds: Double(sent - now) / 1e9)
            stats.frameSent(seq: unit.seq, bytes: unit.json.count + unit.data.count,
                            latencySeconds: Double(sent &- unit.capturedNanos) / 1e9)
            videoStats?.viewerSent(id: connection.id, bytes: unit.json.count + unit.data.count)
            if viewer.hasWork(feed) { lws_callback_on_writable(wsi) }
            return 0
        }
    }

    /// Service thread: lws_write with the LWS_PRE headroom it needs; false when the connection failed.
    private func write(_ wsi: OpaquePointer, _ data: Data, _ protocolType: lws_write_protocol) -> Bool {
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: pre + data.count)
        defer { buffer.deallocate() }
        data.copyBytes(to: buffer + pre, count: data.count)
        return lws_write(wsi, buffer + pre, data.count, protocolType) >= data.count
    }

    // MARK: - HTTP

    /// Service thread: a connection id, never reused in the server's life.
    private func takeID() -> UInt64 {
        defer { nextID += 1 }
        return nextID
    }

    /// Service thread: a request's headers are in.
    private func beginHTTP(_ wsi: OpaquePointer, path: String) -> Int32 {
        let connection = connections[wsi] ?? Connection(role: .http, id: takeID())
        connections[wsi] = connection
        connectionsByID[connection.id] = wsi
        connection.resetExchange()
        var uri: UnsafeMutablePointer<CChar>?
        var uriLength: Int32 = 0
        let methodIndex = lws_http_get_uri_and_method(wsi, &uri, &uriLength)
        let request = HTTPRequest(method: Self.method(methodIndex), path: path, query: query(wsi),
                                  headers: headers(wsi), peer: peer(wsi))
        guard request.headers["host"] != nil, lws_hdr_total_length(wsi, WSI_TOKEN_HTTP) > 0 else {
            // HTTP/1.1 requires Host. libwebsockets 4.1 also ends a request
            // line at an encoded CR or LF in its URL and drops the rest of the
            // line (the query after it and the HTTP version; after %0A the
            // Host header too), so ?name=a%0Ab arrives as ?name=a: a request
            // line without its HTTP version is refused, never cut short.
            connection.closeAfterResponse = true
            return respond(wsi, connection, .error(400, "bad request",
                                                   detail: "no Host header or HTTP version, or a line break (%0A, %0D) in the URL"))
        }
        if let refusal = access?.policy.hostRefusal(request, port: boundPort) {
            connection.closeAfterResponse = true
            return respond(wsi, connection, refusal)
        }
        let uriBytes = Int(uriLength) + Int(lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_URI_ARGS))
        if let refusal = Self.sizeRefusal(uriBytes: uriBytes, headers: request.headers,
                                          arrivedBytes: arrivedHeaderBytes(wsi, connection, request, uriBytes: uriBytes)) {
            connection.closeAfterResponse = true
            return respond(wsi, connection, refusal)
        }
        connection.corsHeaders = access?.policy.corsHeaders(request) ?? []
        connection.streamCredential = access?.credential(for: request).credential
        connection.requestHost = request.headers["host"] ?? ""
        connection.headOnly = request.method == .head
        let hasBody = [.post, .put, .patch].contains(request.method)
        let contentLength = request.headers["content-length"]
        let transferEncoding = request.headers["transfer-encoding"]
        if hasBody && contentLength == nil && transferEncoding == nil {
            // HTTP/1.1: no Content-Length, no body. But libwebsockets 4.1
            // expects up to 100 MiB of body after a POST, PUT or PATCH
            // without one, and would take the next request on this
            // connection for it: answer the request as bodiless, then close.
            connection.closeAfterResponse = true
        }
        if let declared = contentLength, declared != "0" {
            // A request with a body is the last on its connection.
            // libwebsockets 4.1 cannot go on after one: bytes pipelined
            // behind a body are fed to a loop that never returns to poll
            // (found by FuzzForms: the service thread spun, every client
            // waited and SIGTERM went unheard). Closing after the answer ends
            // that loop; uploads and sign-ins are rare enough for the cost of
            // a new connection.
            connection.closeAfterResponse = true
        }
        if contentLength != nil && transferEncoding != nil {
            connection.closeAfterResponse = true
            return respond(wsi, connection, .error(400, "conflicting body length",
                                                   detail: "send Content-Length or Transfer-Encoding, not both"))
        }
        if transferEncoding != nil {
            // libwebsockets 4.1 does not decode chunked request bodies on the
            // server side: without a Content-Length it expects a body of up to
            // 100 MiB (server.c, lws_http_action) and hands the chunk framing
            // to LWS_CALLBACK_HTTP_BODY as body bytes, and the body never
            // completes. An upload is a file of known size: ask for its length.
            connection.closeAfterResponse = true
            return respond(wsi, connection, .error(411, "length required",
                                                   detail: "send the body with a Content-Length (chunked uploads are not accepted)"))
        }
        let length = contentLength.flatMap { Int($0) } ?? 0
        if hasBody && length > 0, let refusal = router.refusalBeforeBody(request) {
            // Credentials, Origin and the route are checked on the headers: a
            // caller who may not make the call is answered before one byte of
            // its body is read, and the connection closes.
            connection.closeAfterResponse = true
            return respond(wsi, connection, refusal)
        }
        if hasBody && length > options.maxBodyBytes {
            connection.closeAfterResponse = true
            return respond(wsi, connection, .error(413, "request body too large",
                                                   detail: "the limit is \(options.maxBodyBytes) bytes"))
        }
        if hasBody && length > 0 {
            connection.request = request
            if let type = request.headers["content-type"], FormCollector.accepts(contentType: type) {
                connection.form = FormCollector(wsi: wsi, contentType: type, maxBytes: options.maxBodyBytes)
            }
            return 0
        }
        return dispatch(wsi, connection, request)
    }

    /// Service thread: routes a complete request; a slow route goes to the
    /// worker and the connection waits for its answer (nothing else does).
    private func dispatch(_ wsi: OpaquePointer, _ connection: Connection, _ request: HTTPRequest) -> Int32 {
        switch router.decide(request) {
        case .respond(let response):
            return respond(wsi, connection, response)
        case .work(let matched, let handler):
            let id = connection.id
            let job = RequestWorker.Job(run: { handler(matched) }, deliver: { [self] response in
                completed.withLock { $0.append((id, response)) }
                wake()
            })
            guard worker.submit(job) else { return respond(wsi, connection, RequestWorker.busy) }
            connection.awaitingWorker = true
            // The next writeable callback replaces lws's content timeout
            // (see LWS_CALLBACK_HTTP_WRITEABLE).
            lws_callback_on_writable(wsi)
            return 0
        }
    }

    /// Service thread (on LWS_CALLBACK_EVENT_WAIT_CANCELLED): answers from the worker go to their connections, if
    /// still open (a connection that closed meanwhile is gone from the map,
    /// and its id is never reused).
    private func deliverCompleted() {
        let answers = completed.withLock { answers -> [(id: UInt64, response: HTTPResponse)] in
            defer { answers.removeAll() }
            return answers
        }
        for (id, response) in answers {
            guard let wsi = connectionsByID[id], let connection = connections[wsi], connection.awaitingWorker else { continue }
            connection.awaitingWorker = false
            connection.pendingAnswer = response
            lws_callback_on_writable(wsi)
        }
    }

    /// Service thread: a new TCP connection, before anything is read. Refused
    /// (closed) when its address already has `maxUnfinishedPerAddress`
    /// connections that have not finished their request headers; when
    /// `maxUnfinished` are unfinished in all, the oldest of them is evicted to
    /// make room, so a newcomer is never locked out by sockets held open.
    private func admitConnection(_ user: UnsafeMutableRawPointer?) -> Int32 {
        guard let user else { return 0 }
        let args = user.assumingMemoryBound(to: lws_filter_network_conn_args.self)
        let fd = Int32(args.pointee.accept_fd)
        let address = withUnsafePointer(to: &args.pointee.cli_addr) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Self.addressText($0) }
        }
        // This descriptor number was another connection's, which is gone: if its
        // count was never given back (lws closes a request it cannot parse, a NUL
        // in the path or headers past its buffer, and reports the wsi's end with
        // the socket already invalid), give it back now. Without this, 16 such
        // requests locked their address out for good (found by FuzzForms).
        forgetUnfinished(fd)
        let count = unfinishedCount[address, default: 0]
        if count >= options.maxUnfinishedPerAddress {
            stats.connectionRefused()
            return 1
        }
        if unfinished.count >= options.maxUnfinished { evictOldestUnfinished() }
        unfinishedCount[address] = count + 1
        admissions += 1
        unfinished[fd] = (address, admissions)
        return 0
    }

    /// Service thread: shuts down the socket of the connection that has waited
    /// longest for its headers; lws sees the hang-up on its next poll and closes
    /// it, freeing its header buffer. It stops counting as unfinished now.
    private func evictOldestUnfinished() {
        guard let oldest = unfinished.min(by: { $0.value.order < $1.value.order })?.key else { return }
        forgetUnfinished(oldest)
        shutdown(oldest, Int32(SHUT_RDWR))
        stats.connectionEvicted()
    }

    /// Service thread: a connection finished its headers (or closed).
    private func headersFinished(_ wsi: OpaquePointer) {
        forgetUnfinished(Int32(lws_get_socket_fd(wsi)))
    }

    /// Service thread: the socket no longer counts as unfinished.
    private func forgetUnfinished(_ fd: Int32) {
        guard let address = unfinished.removeValue(forKey: fd)?.address else { return }
        let left = unfinishedCount[address, default: 1] - 1
        unfinishedCount[address] = left > 0 ? left : nil
    }

    /// A request line in and then nothing for this long, with the headers not
    /// complete: the request is answered 400 and closed (see answerStalledHeaders).
    static let stalledHeadersMillis: Int64 = 1000

    /// Service thread (LWS_CALLBACK_TIMER, armed when the connection was made):
    /// a request whose request line came but whose headers stopped coming
    /// for `stalledHeadersMillis` gets 400 and is closed. Real clients send
    /// their headers at once; the ones that stop are a header libwebsockets
    /// 4.1 cannot parse (a name that is a strict prefix of one it knows,
    /// `A: b` or `X-A: 1`: it takes the rest of the headers for that name
    /// and waits for their end for good), or someone holding a header buffer.
    /// Before the request line, lws's own header timeout (5 s) applies.
    private func answerStalledHeaders(_ wsi: OpaquePointer) -> Int32 {
        let fd = Int32(lws_get_socket_fd(wsi))
        guard fd >= 0, unfinished[fd] != nil else { return 0 }
        let quiet = Int64(sl_socket_quiet_ms(fd))
        guard lws_hdr_total_length(wsi, WSI_TOKEN_HTTP) > 0, quiet >= Self.stalledHeadersMillis else {
            let wait = quiet >= 0 ? max(100, Self.stalledHeadersMillis - quiet) : Self.stalledHeadersMillis
            lws_set_timer_usecs(wsi, wait * 1000)
            return 0
        }
        forgetUnfinished(fd)
        stats.headersStalled()
        logger.info("answering a request whose headers stopped coming", metadata: ["peer": "\(peer(wsi))"])
        let answer = HTTPResponse.error(400, "incomplete or unparsable request headers",
                                        detail: "the headers did not end (an empty line) within \(Self.stalledHeadersMillis) ms "
                                            + "of the request line; a header name this server cannot parse (such as 'A:') does that too")
        _ = writeWholeBeforeClosing(wsi, answer)
        return -1
    }

    /// Service thread: an answer written whole, head (with `Connection: close`)
    /// and body, outside the usual exchange (a refused upgrade, stalled
    /// headers); the caller then has lws close the connection. False when the
    /// connection failed.
    private func writeWholeBeforeClosing(_ wsi: OpaquePointer, _ response: HTTPResponse) -> Bool {
        let body = response.bodyData ?? Data()
        guard writeHead(wsi, response.status, response.contentType, Int64(body.count),
                        response.headers + [("connection:", "close")]) else { return false }
        return body.isEmpty || write(wsi, body, LWS_WRITE_HTTP_FINAL)
    }

    /// Any thread (pure): the numeric address.
    static func addressText(_ address: UnsafePointer<sockaddr>) -> String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                var a = v4.pointee.sin_addr
                _ = inet_ntop(AF_INET, &a, &text, socklen_t(text.count))
            }
        case AF_INET6:
            address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                var a = v6.pointee.sin6_addr
                _ = inet_ntop(AF_INET6, &a, &text, socklen_t(text.count))
            }
        default:
            return "unknown"
        }
        return String(cChars: text)
    }

    /// Service thread: a WebSocket may open only under a valid Host, from the
    /// server's own (or an allowed) Origin, with a viewer credential when
    /// viewing is not open; otherwise it is answered (421, 403, 401) before
    /// any upgrade, and lws closes it (we return 1).
    private func confirmWebSocket(_ wsi: OpaquePointer) -> Int32 {
        let request = HTTPRequest(method: .get, path: requestPath(wsi), query: query(wsi), headers: headers(wsi), peer: peer(wsi))
        if let access {
            if let refusal = access.policy.hostRefusal(request, port: boundPort) ?? access.policy.originRefusal(request)
                ?? access.refusal(for: request, needs: .viewer) {
                return writeWholeBeforeClosing(wsi, refusal) ? 1 : -1
            }
        }
        switch StreamFormat.parse(request.query, h264Available: video != nil, lowAvailable: options.videoLowAvailable) {
        case .failure(let refused):
            return writeWholeBeforeClosing(wsi, refused.response) ? 1 : -1
        case .success(let format):
            upgradingFormats[wsi] = format
        }
        // The stream ends if this credential is revoked (checked as frames go out).
        if let credential = access?.credential(for: request).credential { upgradingCredentials[wsi] = credential }
        return 0
    }

    /// HTTP/1.1 only: a request asking to upgrade to anything but a
    /// WebSocket (h2c) is answered as plain HTTP/1.1, whole, here; lws then
    /// completes the transaction (we return 1).
    private func answerWithoutUpgrade(_ wsi: OpaquePointer) -> Int32 {
        var uri: UnsafeMutablePointer<CChar>?
        var uriLength: Int32 = 0
        let method = Self.method(lws_http_get_uri_and_method(wsi, &uri, &uriLength))
        let path = requestPath(wsi)
        var response = HTTPResponse.error(400, "upgrade refused", detail: "this server speaks HTTP/1.1; send the request without 'Upgrade: h2c'")
        if method == .get || method == .head,
           case .respond(let answer) = router.decide(HTTPRequest(method: method, path: path.isEmpty ? "/" : path,
                                                                 query: query(wsi), headers: headers(wsi), peer: peer(wsi))),
           answer.bodyData != nil {
            response = answer
        }
        return writeWholeBeforeClosing(wsi, response) ? 1 : -1
    }

    /// Service thread: a piece of the body. A form goes through lws_spa as it
    /// comes (only its fields and file are kept); anything else is kept whole.
    private func receiveBody(_ wsi: OpaquePointer, _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
        guard let connection = connections[wsi], connection.request != nil else { return 0 }
        connection.bodyBytes += length
        if connection.bodyBytes > options.maxBodyBytes {
            connection.request = nil
            connection.form = nil
            connection.closeAfterResponse = true
            return respond(wsi, connection, .error(413, "request body too large",
                                                   detail: "the limit is \(options.maxBodyBytes) bytes"))
        }
        guard let input, length > 0 else { return 0 }
        if connection.bodyBytes == length {
            let first = UnsafeRawBufferPointer(start: input, count: length)
            if Self.isOwnRequestLine(first, method: connection.request!.method) {
                connection.request = nil
                connection.form = nil
                connection.closeAfterResponse = true
                return respond(wsi, connection, .error(400, "request with a body sent before the previous answer",
                                                       detail: "send a request with a body once the answers before it have come (no pipelining)"))
            }
            // A PNG or JPEG is an image whatever its Content-Type says (curl's
            // --data-binary labels a file application/x-www-form-urlencoded).
            if connection.form != nil, ImageUpload.format(of: Data(first.prefix(8))) != nil { connection.form = nil }
        }
        if let form = connection.form {
            if let problem = form.feed(input, length) {
                connection.request = nil
                connection.form = nil
                connection.closeAfterResponse = true
                return respond(wsi, connection, problem)
            }
        } else {
            connection.request!.body.append(input.assumingMemoryBound(to: UInt8.self), count: length)
        }
        return 0
    }

    /// Any thread (pure). Whether the first bytes of a body are the start of
    /// its own request line. libwebsockets 4.1 hands a request that was
    /// pipelined behind another (its bytes came in one read with the one
    /// before) its own request line and headers as its body, never the body
    /// sent: such a request is refused rather than given the wrong bytes.
    /// No body a route takes begins so (JSON, forms, images; a form's spaces
    /// are '+'), and a 3-byte body "POS" is no image either.
    static func isOwnRequestLine(_ firstBytes: UnsafeRawBufferPointer, method: HTTPRequest.Method) -> Bool {
        let line = Array("\(method.rawValue) /".utf8)
        let compared = min(firstBytes.count, line.count)
        return compared > 0 && firstBytes.prefix(compared).elementsEqual(line.prefix(compared))
    }

    /// Service thread: writes an answer's head and starts its body (or the
    /// MJPEG stream); the rest goes out on writeable callbacks.
    private func respond(_ wsi: OpaquePointer, _ connection: Connection, _ answer: HTTPResponse) -> Int32 {
        var response = answer
        response.headers += Self.securityHeaders(host: connection.requestHost) + connection.corsHeaders
        switch response.body {
        case .mjpegStream where connection.headOnly:
            // A HEAD of a stream: its head, then the connection closes (a stream has no length).
            connection.closeAfterResponse = true
            guard writeHead(wsi, response.status, response.contentType, -1, response.headers) else { return -1 }
            return finishExchange(wsi, connection)
        case .mjpegStream:
            guard writeHead(wsi, response.status, response.contentType, -1, response.headers) else { return -1 }
            connection.role = .mjpeg
            connection.credential = connection.streamCredential
            connection.accountedThrough = frames.latest.map { $0.index - 1 } ?? 0
            stats.clients(.mjpeg, change: 1)
            lws_callback_on_writable(wsi)
            return 0
        case .data(let body):
            var headers = response.headers
            if connection.closeAfterResponse { headers.append(("connection:", "close")) }
            let length = connection.headOnly ? (response.headLength ?? body.count) : body.count
            guard writeHead(wsi, response.status, response.contentType, Int64(length), headers) else { return -1 }
            // A HEAD gets the length a GET would, and no body.
            if body.isEmpty || connection.headOnly { return finishExchange(wsi, connection) }
            if body.count <= options.chunkBytes {
                // A short answer goes out whole now (libwebsockets keeps what
                // the socket does not take), so the exchange ends here and
                // lws itself skips any body the request still has coming.
                guard write(wsi, body, LWS_WRITE_HTTP_FINAL) else { return -1 }
                return finishExchange(wsi, connection)
            }
            connection.responseBody = body
            connection.responseOffset = 0
            lws_callback_on_writable(wsi)
            return 0
        }
    }

    /// Service thread: the next `chunkBytes` of an answer's body.
    private func writeBody(_ wsi: OpaquePointer, _ connection: Connection) -> Int32 {
        let body = connection.responseBody
        guard connection.responseOffset < body.count else { return 0 }
        let end = min(body.count, connection.responseOffset + options.chunkBytes)
        let last = end == body.count
        let chunk = body.subdata(in: connection.responseOffset..<end)
        guard write(wsi, chunk, last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) else { return -1 }
        connection.responseOffset = end
        if last { return finishExchange(wsi, connection) }
        lws_callback_on_writable(wsi)
        return 0
    }

    /// Service thread: an answer is out; close, or wait for the next request.
    private func finishExchange(_ wsi: OpaquePointer, _ connection: Connection) -> Int32 {
        if connection.closeAfterResponse { return -1 }
        connection.resetExchange()
        return lws_http_transaction_completed(wsi) != 0 ? -1 : 0
    }

    /// Service thread: the newest frame as one MJPEG part, if the client has not had it.
    private func sendMJPEGPart(_ wsi: OpaquePointer, _ connection: Connection) -> Int32 {
        // libwebsockets arms its content timeout (requestTimeoutSeconds) when
        // the LWS_CALLBACK_HTTP that started this stream returns, and closed
        // every stream 5 s in: a stream has no end, so it has no timeout. The
        // first call comes on the writeable callback `respond` asked for, after that.
        lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0)
        guard let frame = frames.latest, frame.index > connection.lastFrameIndex else { return 0 }
        if lws_send_pipe_choked(wsi) != 0 { return 0 }
        markSent(frame, to: connection)
        var part = Data(MJPEG.partHead(length: frame.jpeg.count, seq: frame.seq, capturedAt: frame.capturedAt).utf8)
        part.append(frame.jpeg)
        part.append(contentsOf: [13, 10])
        guard write(wsi, part, LWS_WRITE_HTTP) else { return -1 }
        stats.frameSent(seq: frame.seq, bytes: part.count,
                        latencySeconds: Double(MonotonicClock.nanos() &- frame.capturedNanos) / 1e9)
        return 0
    }

    /// Any thread (pure). On every answer: the page may load only its own scripts, styles and
    /// images and talk only to its own server (and its WebSocket), may not be
    /// framed, and sends no referrer; browsers must not guess content types.
    static func securityHeaders(host: String) -> [(String, String)] {
        let sockets = host.isEmpty || host.contains(where: { $0 == " " || $0 == ";" || $0 == "," || $0 == "'" })
            ? "" : " ws://\(host) wss://\(host)"
        return [
            ("content-security-policy:", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
                + "connect-src 'self'\(sockets); object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"),
            ("x-content-type-options:", "nosniff"),
            ("referrer-policy:", "no-referrer"),
            ("x-frame-options:", "DENY"),
        ]
    }

    /// Service thread: writes the status line and headers; names end in ':'.
    private func writeHead(_ wsi: OpaquePointer, _ status: Int, _ contentType: String, _ length: Int64,
                           _ headers: [(String, String)]) -> Bool {
        var names = headers.map { strdup($0.0.hasSuffix(":") ? $0.0 : $0.0 + ":") }
        var values = headers.map { strdup($0.1) }
        defer { (names + values).forEach { free($0) } }
        let result = names.withUnsafeMutableBufferPointer { namePointers in
            values.withUnsafeMutableBufferPointer { valuePointers in
                namePointers.withMemoryRebound(to: UnsafePointer<CChar>?.self) { n in
                    valuePointers.withMemoryRebound(to: UnsafePointer<CChar>?.self) { v in
                        sl_lws_write_http_head(wsi, UInt32(status), contentType, length, n.baseAddress, v.baseAddress,
                                               Int32(headers.count))
                    }
                }
            }
        }
        return result == 0
    }

    // MARK: - Request details

    /// Any thread (pure).
    private static func method(_ index: Int32) -> HTTPRequest.Method {
        switch index {
        case Int32(LWSHUMETH_GET): return .get
        case Int32(LWSHUMETH_POST): return .post
        case Int32(LWSHUMETH_PUT): return .put
        case Int32(LWSHUMETH_PATCH): return .patch
        case Int32(LWSHUMETH_DELETE): return .delete
        case Int32(LWSHUMETH_OPTIONS): return .options
        case Int32(LWSHUMETH_HEAD): return .head
        default: return .other
        }
    }

    /// Service thread (inside a callback for `wsi`): the decoded path.
    private func requestPath(_ wsi: OpaquePointer) -> String {
        let length = Int(lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI))
        guard length > 0 else { return "" }
        var buffer = [CChar](repeating: 0, count: length + 1)
        guard lws_hdr_copy(wsi, &buffer, Int32(buffer.count), WSI_TOKEN_GET_URI) > 0 else { return "" }
        return String(cChars: buffer)
    }

    /// Service thread (inside a callback for `wsi`): the query, as lws
    /// decoded it (%xx, and + as a space), each `name=value` in full.
    private func query(_ wsi: OpaquePointer) -> [String: String] {
        var result: [String: String] = [:]
        var index: Int32 = 0
        while index < 32 {
            // Each buffer fits its fragment: a fixed one made lws refuse a
            // longer argument, which silently ended the query there.
            var buffer = [CChar](repeating: 0, count: Int(lws_hdr_fragment_length(wsi, WSI_TOKEN_HTTP_URI_ARGS, index)) + 1)
            guard lws_hdr_copy_fragment(wsi, &buffer, Int32(buffer.count), WSI_TOKEN_HTTP_URI_ARGS, index) >= 0 else { break }
            let fragment = String(cChars: buffer)
            if let equals = fragment.firstIndex(of: "=") {
                result[String(fragment[..<equals])] = String(fragment[fragment.index(after: equals)...])
            } else if !fragment.isEmpty {
                result[fragment] = ""
            }
            index += 1
        }
        return result
    }

    /// Service thread (inside a callback for `wsi`): every header libwebsockets parsed into one of its known tokens, by
    /// lowercase name without the colon, plus `customHeaders` (libwebsockets 4.1
    /// keeps headers it does not know only for lookup by name).
    private func headers(_ wsi: OpaquePointer) -> [String: String] {
        var result: [String: String] = [:]
        var buffer = [CChar](repeating: 0, count: 4096)
        for index in 0..<Int(WSI_TOKEN_COUNT.rawValue) {
            let token = lws_token_indexes(rawValue: UInt32(index))
            let total = lws_hdr_total_length(wsi, token)
            guard total > 0, let raw = lws_token_to_string(token) else { continue }
            let name = String(cString: raw)
            guard name.hasSuffix(":"), !name.hasPrefix(":") else { continue }
            if Int(total) + 1 > buffer.count { buffer = [CChar](repeating: 0, count: Int(total) + 1) }
            guard lws_hdr_copy(wsi, &buffer, Int32(buffer.count), token) >= 0 else { continue }
            result[String(name.dropLast()).lowercased()] = String(cChars: buffer)
        }
        // Headers lws has no token for, looked up by name: the ones a handler reads.
        for name in Self.customHeaders {
            for spelling in [name, name.split(separator: "-").map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined(separator: "-")] {
                let key = spelling + ":"
                let length = lws_hdr_custom_length(wsi, key, Int32(key.utf8.count))
                guard length > 0, length < 1024 else { continue }
                if Int(length) + 1 > buffer.count { buffer = [CChar](repeating: 0, count: Int(length) + 1) }
                guard lws_hdr_custom_copy(wsi, &buffer, Int32(buffer.count), key, Int32(key.utf8.count)) >= 0 else { continue }
                result[name] = String(cChars: buffer)
                break
            }
        }
        return result
    }

    /// The total cap on connections is the process's open-file limit (libwebsockets
    /// sizes its table from it): the soft limit is raised to the hard one, as far as
    /// 1,048,576, and returned. Beyond it, new connections wait in the kernel's
    /// backlog; open ones are never evicted.
    static func raiseOpenFileLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        let wanted = min(limit.rlim_max, 1 << 20)
        if limit.rlim_cur < wanted {
            var raised = limit
            raised.rlim_cur = wanted
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return Int(limit.rlim_cur)
    }

    /// URLs and header sections a request may have. libwebsockets holds up to
    /// `sightline_lws.c`'s 16 KiB of request line and headers; what fits but
    /// is larger than these gets 414 or 431 (beyond 16 KiB lws closes the
    /// connection before any callback: it has no hook there).
    static let maxURIBytes = 8192
    static let maxHeaderBytes = 8192

    /// 414 for a long URL, 431 for large headers, else nil. Headers count as the
    /// larger of those lws has a token for and `arrivedBytes` (what came over
    /// the socket for a bodiless request, less its request line: headers lws
    /// keeps only by name, which cannot be added up otherwise).
    static func sizeRefusal(uriBytes: Int, headers: [String: String], arrivedBytes: Int? = nil) -> HTTPResponse? {
        if uriBytes > maxURIBytes {
            return .error(414, "URI too long", detail: "\(uriBytes) bytes of path and query; the limit is \(maxURIBytes)")
        }
        let known = headers.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count + 4 }
        let headerBytes = max(known, arrivedBytes ?? 0)
        if headerBytes > maxHeaderBytes {
            return .error(431, "request header fields too large",
                          detail: "\(headerBytes) bytes of headers; the limit is \(maxHeaderBytes)")
        }
        return nil
    }

    /// Service thread (LWS_CALLBACK_HTTP): the bytes of headers that came over the
    /// socket for this request, when that can be told: a request without a body
    /// (a body's first bytes may be in already). What the socket received since
    /// the last request's headers, less this request line. Requests pipelined in
    /// the same packets as this one count with it (browsers, curl and players
    /// never pipeline); over TLS the record framing counts too (some 30 bytes).
    private func arrivedHeaderBytes(_ wsi: OpaquePointer, _ connection: Connection, _ request: HTTPRequest,
                                    uriBytes: Int) -> Int? {
        let received = Int(sl_socket_bytes_received(lws_get_socket_fd(wsi)))
        guard received >= 0 else { return nil }
        defer { connection.receivedThroughHeaders = received }
        let declared = request.headers["content-length"].flatMap { Int($0) } ?? 0
        guard declared == 0, request.headers["transfer-encoding"] == nil else { return nil }
        // "METHOD URI HTTP/1.1\r\n" and the empty line that ends the headers.
        let requestLine = request.method.rawValue.utf8.count + uriBytes + 2 + 10 + 2
        return max(0, received - connection.receivedThroughHeaders - requestLine)
    }

    /// Headers without an lws token that handlers read (AuthGuard: whether a browser script asked).
    static let customHeaders = ["sec-fetch-mode"]

    /// Service thread (inside a callback for `wsi`): the peer's address.
    private func peer(_ wsi: OpaquePointer) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        guard lws_get_peer_simple(wsi, &buffer, buffer.count) != nil else { return "" }
        return String(cChars: buffer)
    }
}

public enum ServerError: Error, CustomStringConvertible {
    case cannotListen(String)
    public var description: String {
        switch self { case .cannotListen(let why): return why }
    }
}

/// The lws context pointer, to wake the service thread from other threads.
/// `@unchecked Sendable`: it is only passed to lws_cancel_service (which lws
/// documents as callable from any thread) while `StreamServer.control` is
/// held and the context is alive.
private struct ContextHandle: @unchecked Sendable {
    let pointer: OpaquePointer
    /// The protocols array the shim made for this context; freed by the service thread after the context.
    let protocols: UnsafeMutableRawPointer?
}

/// Service thread: the C entry point lws calls; finds the server through the context's user pointer.
private func lwsCallbackEntry(_ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
                              _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
    guard let wsi, let context = lws_get_context(wsi), let raw = lws_context_user(context) else {
        return lws_callback_http_dummy(wsi, reason, user, input, length)
    }
    return Unmanaged<StreamServer>.fromOpaque(raw).takeUnretainedValue()
        .callback(wsi, reason, user, input, length)
}

/// Whichever thread lws logs from (the service thread, or the main thread in `start`).
private func lwsLogEntry(_ level: Int32, _ line: UnsafePointer<CChar>?) {
    if let line { FileHandle.standardError.write(Data("lws: ".utf8) + Data(String(cString: line).utf8)) }
}

extension String {
    /// From a NUL-terminated C buffer.
    init(cChars buffer: [CChar]) {
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        self.init(decoding: bytes, as: UTF8.self)
    }
}
