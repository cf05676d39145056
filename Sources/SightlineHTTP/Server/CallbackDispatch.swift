import CSightlineLWS
import Foundation
import Logging
import SightlineSupport

/// Every libwebsockets callback, by reason, to the part that handles it:
/// `ConnectionAdmission` (new sockets, unfinished headers), `RequestReader`
/// (requests, bodies, upgrades), `ResponseWriter` (answers), and each
/// stream's `StreamSession` (WebSocket viewers, endless answers), which the
/// `StreamProvider` made. A wake-up (LWS_CALLBACK_EVENT_WAIT_CANCELLED)
/// takes what other threads posted to the `ServiceInbox` (worker answers, a
/// certificate reload, a revocation finding) and tells every stream's session.
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
    private let certificates: CertificateReload?
    private let workerWaitSeconds: Int32
    private let streams: any StreamProvider
    private let options: StreamServer.Options
    private let sessions: SessionStore?
    private let logger: Logger

    /// `stats`: the server's own figures (refused connections, stalled headers).
    init(options: StreamServer.Options, loop: ServiceLoop, inbox: ServiceInbox, streams: any StreamProvider, stats: ServerStats,
         routes: RouteTable, worker: RequestWorker, access: AuthGuard?, logger: Logger) {
        self.streams = streams
        self.options = options
        sessions = access?.sessions
        self.logger = logger
        self.loop = loop
        self.inbox = inbox
        table = ConnectionTable()
        admission = ConnectionAdmission(maxUnfinishedPerAddress: options.maxUnfinishedPerAddress,
                                        maxUnfinished: options.maxUnfinished, trustedProxies: options.trustedProxies,
                                        stats: stats)
        writer = ResponseWriter(chunkBytes: options.chunkBytes, streams: streams)
        reader = RequestReader(options: options, table: table, writer: writer, admission: admission, routes: routes,
                               worker: worker, inbox: inbox, access: access, stats: stats, logger: logger, streams: streams)
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
            if table[wsi]?.role == .bodyStream { return DepartureWatch.check(wsi) }
            return reader.answerStalledHeaders(wsi)
        case LWS_CALLBACK_WSI_DESTROY:
            admission.headersFinished(wsi)
            return 0
        case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
            // A path the provider streams (`/ws`, or `/cam/NAME/ws` of a camera that exists).
            return streams.acceptsWebSocket(path: RequestHeaders.path(wsi)) ? 0 : 1
        case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
            admission.headersFinished(wsi)
            let upgrade = input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? ""
            return upgrade == "websocket" ? reader.confirmWebSocket(wsi) : reader.answerWithoutUpgrade(wsi)
        case LWS_CALLBACK_ESTABLISHED:
            webSocketEstablished(wsi)
            return 0
        case LWS_CALLBACK_RECEIVE:
            return receiveWebSocket(wsi, length: length)
        case LWS_CALLBACK_SERVER_WRITEABLE:
            return webSocketWriteable(wsi)
        case LWS_CALLBACK_CLOSED:
            table.remove(wsi)?.session?.closed()
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
                connection.session?.closed()
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
        if let notice = mail.revocation { endRevokedStreams(notice) }
        for (wsi, connection) in table.all where connection.role != .http {
            guard let session = connection.session else { continue }
            session.woken(socket(wsi, connection))
        }
    }

    /// Service thread: a token was revoked (here or by `sightline token
    /// revoke`): streams opened with it end, each on its next writeable
    /// callback. The store was asked on the `RevocationWatch`'s thread; this
    /// only compares credentials.
    private func endRevokedStreams(_ notice: RevocationNotice) {
        for (wsi, connection) in table.all where connection.role != .http && !connection.revoked {
            guard let credential = connection.credential,
                  notice.revokes(credential, checkedNanos: connection.credentialCheckedNanos) else { continue }
            connection.revoked = true
            sessions?.close(credentialNamed: credential.name)
            logger.notice("closing a stream whose token was revoked", metadata: ["token": "\(credential.name)"])
            socket(wsi, connection).askWriteable()
        }
    }

    /// A stream connection's socket, as its session sees it.
    private func socket(_ wsi: OpaquePointer, _ connection: Connection) -> StreamSocket {
        StreamSocket(wsi: wsi, id: connection.id, kind: connection.role == .webSocket ? .webSocket : .httpBody)
    }

    // MARK: - WebSocket

    /// Service thread (LWS_CALLBACK_ESTABLISHED): a WebSocket viewer, with
    /// what it brought to its upgrade; its session comes from the provider's opener.
    private func webSocketEstablished(_ wsi: OpaquePointer) {
        let connection = Connection(role: .webSocket, id: table.takeID())
        guard let upgrade = table.upgrades.removeValue(forKey: wsi) else { return }
        connection.credential = upgrade.credential
        connection.credentialCheckedNanos = upgrade.credentialCheckedNanos
        table.add(connection, for: wsi)
        connection.session = upgrade.open(socket(wsi, connection))
    }

    /// Service thread (LWS_CALLBACK_SERVER_WRITEABLE): ends a revoked stream
    /// (1008), else its session sends what is due.
    private func webSocketWriteable(_ wsi: OpaquePointer) -> Int32 {
        guard let connection = table[wsi], let session = connection.session else { return -1 }
        let socket = socket(wsi, connection)
        if connection.revoked {
            socket.setCloseReason(.policyViolation, "the credential of this stream was revoked")
            return -1
        }
        return session.writeable(socket) ? 0 : -1
    }

    /// Service thread: counts a client's incoming message (clients only
    /// listen); one over `maxMessageBytes` closes it with 1009.
    private func receiveWebSocket(_ wsi: OpaquePointer, length: Int) -> Int32 {
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

    /// Service thread (LWS_CALLBACK_HTTP_WRITEABLE): the worker's answer, the
    /// wait for it, what an endless answer's session sends, or the next piece of a body.
    private func httpWriteable(_ wsi: OpaquePointer) -> Int32 {
        guard let connection = table[wsi] else { return 0 }
        if connection.revoked { return -1 }
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
        if connection.role == .bodyStream, let session = connection.session {
            // libwebsockets arms its content timeout (requestTimeoutSeconds) when
            // the LWS_CALLBACK_HTTP that started this stream returns, and closed
            // every stream 5 s in: a stream has no end, so it has no timeout.
            lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0)
            guard session.writeable(socket(wsi, connection)) else { return -1 }
            // Until the session asks again (a new frame), unless lws still holds part of what it wrote (see DepartureWatch).
            if lws_send_pipe_choked(wsi) == 0 { DepartureWatch.pause(wsi) }
            return 0
        }
        return writer.writeBody(wsi, connection)
    }
}
