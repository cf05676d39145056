import CSightlineLWS
import Foundation
import Logging
import SightlineVision
import SightlineSupport
import SightlinePipeline

/// Every libwebsockets callback, by reason, to the part that handles it:
/// `ConnectionAdmission` (new sockets, unfinished headers), `RequestReader`
/// (requests, bodies, upgrades), `ResponseWriter` (answers), `FrameFanOut`
/// (`/ws` and MJPEG viewers). A wake-up (LWS_CALLBACK_EVENT_WAIT_CANCELLED)
/// takes what other threads posted to the `ServiceInbox` (worker answers, a
/// certificate reload, a revocation finding) and asks the streaming clients
/// for writeable callbacks.
///
/// Service thread only: made by `StreamServer.start`, then handed to
/// `ServiceLoop.start` (`sending`), which keeps it as the context's user
/// pointer; lws calls it on the service thread (and, while the context is
/// made, on the thread that makes it, before the service thread exists).
final class CallbackDispatch {
    private let loop: ServiceLoop
    private let inbox: ServiceInbox
    private let table: ConnectionTable
    private let admission: ConnectionAdmission
    private let reader: RequestReader
    private let writer: ResponseWriter
    private let fanOut: FrameFanOut
    private let certificates: CertificateReload?
    private let workerWaitSeconds: Int32

    private let cameras: CameraFeeds

    /// `cameras`: the first is `/ws`'s; the server's own figures (refused connections) count in its stats.
    init(options: StreamServer.Options, loop: ServiceLoop, inbox: ServiceInbox, cameras: CameraFeeds,
         routes: RouteTable, worker: RequestWorker, access: AuthGuard?, logger: Logger) {
        let stats = cameras.first.stats
        self.cameras = cameras
        self.loop = loop
        self.inbox = inbox
        table = ConnectionTable()
        admission = ConnectionAdmission(maxUnfinishedPerAddress: options.maxUnfinishedPerAddress,
                                        maxUnfinished: options.maxUnfinished, trustedProxies: options.trustedProxies,
                                        stats: stats)
        fanOut = FrameFanOut(table: table, cameras: cameras, options: options, sessions: access?.sessions, logger: logger)
        writer = ResponseWriter(chunkBytes: options.chunkBytes, fanOut: fanOut)
        reader = RequestReader(options: options, table: table, writer: writer, admission: admission, routes: routes,
                               worker: worker, inbox: inbox, access: access, stats: stats, logger: logger,
                               h264Available: cameras.first.video != nil, cameras: cameras)
        certificates = options.tls.map { CertificateReload(tls: $0, logger: logger) }
        workerWaitSeconds = Int32(options.workerWaitSeconds)
    }

    /// The context is bound to `port` (before the service thread starts).
    func bound(port: Int) {
        reader.boundPort = port
    }

    /// Service thread: every lws callback, by reason.
    func callback(_ wsi: OpaquePointer, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
                  _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
        switch reason {
        case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
            woken(wsi)
            return 0
        case LWS_CALLBACK_FILTER_NETWORK_CONNECTION:
            return admission.admit(user)
        case LWS_CALLBACK_WSI_CREATE:
            reader.connectionCreated(wsi)
            return 0
        case LWS_CALLBACK_TIMER:
            // A stream's look at whether its client left; else the stalled-header check armed at WSI_CREATE.
            if table[wsi]?.role == .mjpeg { return DepartureWatch.check(wsi) }
            return reader.answerStalledHeaders(wsi)
        case LWS_CALLBACK_WSI_DESTROY:
            admission.headersFinished(wsi)
            return 0
        case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
            // `/ws`, or `/cam/NAME/ws` of a camera that exists.
            return cameras.feed(forPath: RequestHeaders.path(wsi))?.path == "/ws" ? 0 : 1
        case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
            admission.headersFinished(wsi)
            let upgrade = input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? ""
            return upgrade == "websocket" ? reader.confirmWebSocket(wsi) : reader.answerWithoutUpgrade(wsi)
        case LWS_CALLBACK_ESTABLISHED:
            fanOut.webSocketEstablished(wsi)
            return 0
        case LWS_CALLBACK_RECEIVE:
            return fanOut.receiveWebSocket(wsi, length: length)
        case LWS_CALLBACK_SERVER_WRITEABLE:
            return fanOut.webSocketWriteable(wsi)
        case LWS_CALLBACK_CLOSED:
            fanOut.webSocketClosed(wsi)
            return 0
        case LWS_CALLBACK_HTTP:
            admission.headersFinished(wsi)
            let path = input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? "/"
            return reader.beginHTTP(wsi, path: path)
        case LWS_CALLBACK_HTTP_BODY:
            return reader.receiveBody(wsi, input, length)
        case LWS_CALLBACK_HTTP_BODY_COMPLETION:
            return reader.bodyCompleted(wsi)
        case LWS_CALLBACK_HTTP_WRITEABLE:
            return httpWriteable(wsi)
        case LWS_CALLBACK_CLOSED_HTTP:
            if let connection = table.remove(wsi) {
                connection.form = nil
                fanOut.httpClosed(connection)
            }
            return 0
        default:
            return lws_callback_http_dummy(wsi, reason, user, input, length)
        }
    }

    /// Service thread (LWS_CALLBACK_EVENT_WAIT_CANCELLED): a frame, a worker's
    /// answer, a certificate reload or a revocation finding is in.
    private func woken(_ wsi: OpaquePointer) {
        loop.markWoke()
        let mail = inbox.take()
        if mail.reloadCertificate, let certificates, let context = lws_get_context(wsi) { certificates.reload(context) }
        reader.deliver(mail.answers)
        if let notice = mail.revocation { fanOut.endRevokedStreams(notice) }
        if !mail.removedCameras.isEmpty { fanOut.endStreams(of: mail.removedCameras) }
        fanOut.wakeStreamingClients()
    }

    /// Service thread (LWS_CALLBACK_HTTP_WRITEABLE): the worker's answer, the
    /// wait for it, the next MJPEG part, or the next piece of a body.
    private func httpWriteable(_ wsi: OpaquePointer) -> Int32 {
        guard let connection = table[wsi] else { return 0 }
        if connection.revoked || connection.cameraRemoved { return -1 }
        if let answer = connection.pendingAnswer {
            connection.pendingAnswer = nil
            return writer.respond(wsi, connection, answer)
        }
        if connection.awaitingWorker {
            // Asked for in `RequestReader.dispatch`, so this runs after lws
            // armed its content timeout for a request without a body (at the
            // end of its LWS_CALLBACK_HTTP handling): the worker's time is not
            // the client's, so wait for the answer up to workerWaitSeconds.
            lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, workerWaitSeconds)
            return 0
        }
        return connection.role == .mjpeg ? fanOut.sendMJPEGPart(wsi, connection) : writer.writeBody(wsi, connection)
    }
}
