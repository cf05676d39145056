import CSightlineLWS
import Foundation
import Logging
import SightlineSupport

/// Takes requests in: checks a request's headers (Host, sizes, body
/// framing, credentials before the body), collects its body (forms through
/// lws_spa), and hands it to the `Router`: quick routes answer at once, slow
/// ones go to the `RequestWorker`, whose answers come back through the
/// `ServiceInbox`. Also the WebSocket upgrade's checks, and the
/// workarounds for what libwebsockets 4.1 gets wrong (pipelined bytes behind
/// a body, chunked bodies, encoded line breaks in the URL, headers that stop
/// coming); each is explained where it is.
///
/// Service thread only (owned by `CallbackDispatch`); the router, worker,
/// inbox and access guard are `Sendable`.
final class RequestReader {
    private let options: StreamServer.Options
    private let table: ConnectionTable
    private let writer: ResponseWriter
    private let admission: ConnectionAdmission
    /// The route table now (replaced when cameras come or go).
    private let routes: RouteTable
    private var router: Router { routes.current }
    private let worker: RequestWorker
    private let inbox: ServiceInbox
    /// Host, Origin and credential checks that come before routing (nil: none).
    private let access: AuthGuard?
    private let stats: ServerStats
    private let logger: Logger
    /// What a WebSocket's upgrade gets.
    private let streams: any StreamProvider
    /// The port the context is bound to (set before the service thread starts; for the Host check).
    var boundPort = 0

    init(options: StreamServer.Options, table: ConnectionTable, writer: ResponseWriter, admission: ConnectionAdmission,
         routes: RouteTable, worker: RequestWorker, inbox: ServiceInbox, access: AuthGuard?, stats: ServerStats,
         logger: Logger, streams: any StreamProvider) {
        self.options = options
        self.table = table
        self.writer = writer
        self.admission = admission
        self.routes = routes
        self.worker = worker
        self.inbox = inbox
        self.access = access
        self.stats = stats
        self.logger = logger
        self.streams = streams
    }

    // MARK: - HTTP

    /// Service thread (LWS_CALLBACK_HTTP): a request's headers are in.
    func beginHTTP(_ wsi: OpaquePointer, path: String) -> Int32 {
        let connection = table[wsi] ?? Connection(role: .http, id: table.takeID())
        table.addHTTP(connection, for: wsi)
        connection.resetExchange()
        let (method, uriLength) = RequestHeaders.method(of: wsi)
        let headers = RequestHeaders.headers(wsi)
        let request = HTTPRequest(method: method, path: path, query: RequestHeaders.query(wsi),
                                  headers: headers, peer: client(wsi, headers))
        guard request.headers["host"] != nil, lws_hdr_total_length(wsi, WSI_TOKEN_HTTP) > 0 else {
            // HTTP/1.1 requires Host. libwebsockets 4.1 also ends a request
            // line at an encoded CR or LF in its URL and drops the rest of the
            // line (the query after it and the HTTP version; after %0A the
            // Host header too), so ?name=a%0Ab arrives as ?name=a: a request
            // line without its HTTP version is refused, never cut short.
            connection.closeAfterResponse = true
            return writer.respond(wsi, connection, .error(400, "bad request",
                                                          detail: "no Host header or HTTP version, or a line break (%0A, %0D) in the URL"))
        }
        if let refusal = access?.policy.hostRefusal(request, port: boundPort) {
            connection.closeAfterResponse = true
            return writer.respond(wsi, connection, refusal)
        }
        let uriBytes = uriLength + Int(lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_URI_ARGS))
        if let refusal = RequestHeaders.sizeRefusal(uriBytes: uriBytes, headers: request.headers,
                                                    arrivedBytes: arrivedHeaderBytes(wsi, connection, request, uriBytes: uriBytes)) {
            connection.closeAfterResponse = true
            return writer.respond(wsi, connection, refusal)
        }
        connection.corsHeaders = access?.policy.corsHeaders(request) ?? []
        connection.streamCredential = access?.credential(for: request).credential
        // After the store was asked: a revocation found by a later read of it ends the stream (see RevocationNotice).
        connection.credentialCheckedNanos = MonotonicClock.nanos()
        connection.requestHost = request.headers["host"] ?? ""
        connection.requestPath = request.path
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
            return writer.respond(wsi, connection, .error(400, "conflicting body length",
                                                          detail: "send Content-Length or Transfer-Encoding, not both"))
        }
        if transferEncoding != nil {
            // libwebsockets 4.1 does not decode chunked request bodies on the
            // server side: without a Content-Length it expects a body of up to
            // 100 MiB (server.c, lws_http_action) and hands the chunk framing
            // to LWS_CALLBACK_HTTP_BODY as body bytes, and the body never
            // completes. An upload is a file of known size: ask for its length.
            connection.closeAfterResponse = true
            return writer.respond(wsi, connection, .error(411, "length required",
                                                          detail: "send the body with a Content-Length (chunked uploads are not accepted)"))
        }
        let length = contentLength.flatMap { Int($0) } ?? 0
        if hasBody && length > 0, let refusal = router.refusalBeforeBody(request) {
            // Credentials, Origin and the route are checked on the headers: a
            // caller who may not make the call is answered before one byte of
            // its body is read, and the connection closes.
            connection.closeAfterResponse = true
            return writer.respond(wsi, connection, refusal)
        }
        if hasBody && length > options.maxBodyBytes {
            connection.closeAfterResponse = true
            return writer.respond(wsi, connection, .error(413, "request body too large",
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

    /// Service thread (LWS_CALLBACK_HTTP_BODY): a piece of the body. A form
    /// goes through lws_spa as it comes (only its fields and file are kept);
    /// anything else is kept whole.
    func receiveBody(_ wsi: OpaquePointer, _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
        guard let connection = table[wsi], connection.request != nil else { return 0 }
        connection.bodyBytes += length
        if connection.bodyBytes > options.maxBodyBytes {
            connection.request = nil
            connection.form = nil
            connection.closeAfterResponse = true
            return writer.respond(wsi, connection, .error(413, "request body too large",
                                                          detail: "the limit is \(options.maxBodyBytes) bytes"))
        }
        guard let input, length > 0 else { return 0 }
        if connection.bodyBytes == length {
            let first = UnsafeRawBufferPointer(start: input, count: length)
            if Self.isOwnRequestLine(first, method: connection.request!.method) {
                connection.request = nil
                connection.form = nil
                connection.closeAfterResponse = true
                return writer.respond(wsi, connection, .error(400, "request with a body sent before the previous answer",
                                                              detail: "send a request with a body once the answers before it have come (no pipelining)"))
            }
            // A file the server takes whole (an image) is one whatever its Content-Type says (curl's
            // --data-binary labels a file application/x-www-form-urlencoded).
            if connection.form != nil, options.isWholeFile(Data(first.prefix(8))) { connection.form = nil }
        }
        if let form = connection.form {
            if let problem = form.feed(input, length) {
                connection.request = nil
                connection.form = nil
                connection.closeAfterResponse = true
                return writer.respond(wsi, connection, problem)
            }
        } else {
            connection.request!.body.append(input.assumingMemoryBound(to: UInt8.self), count: length)
        }
        return 0
    }

    /// Service thread (LWS_CALLBACK_HTTP_BODY_COMPLETION): the body is in; the request goes to the router.
    func bodyCompleted(_ wsi: OpaquePointer) -> Int32 {
        guard let connection = table[wsi] else { return 0 }
        if connection.bodyCompleted {
            // A second end of the same body: the client pipelined more
            // bytes behind a body whose answer is not out yet (the
            // worker's, a long body, a stream). libwebsockets 4.1 offers
            // those bytes as the end of the body again and again, in a
            // loop that never returns to poll (see beginHTTP): close now.
            logger.info("closing a connection that sent a request behind a body before its answer",
                        metadata: ["peer": "\(client(wsi, RequestHeaders.headers(wsi)))"])
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
            case .failure(let problem): return writer.respond(wsi, connection, problem.response)
            }
        }
        return dispatch(wsi, connection, request)
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

    /// Service thread: routes a complete request; a slow route goes to the
    /// worker and the connection waits for its answer (nothing else does).
    private func dispatch(_ wsi: OpaquePointer, _ connection: Connection, _ request: HTTPRequest) -> Int32 {
        switch router.decide(request) {
        case .respond(let response):
            return writer.respond(wsi, connection, response)
        case .work(let matched, let handler):
            let id = connection.id
            let job = RequestWorker.Job(run: { handler(matched) }, deliver: { [inbox] response in
                inbox.post(answer: response, for: id)
            })
            guard worker.submit(job) else { return writer.respond(wsi, connection, RequestWorker.busy) }
            connection.awaitingWorker = true
            // The next writeable callback replaces lws's content timeout
            // (see CallbackDispatch.httpWriteable).
            lws_callback_on_writable(wsi)
            return 0
        }
    }

    /// Service thread (on LWS_CALLBACK_EVENT_WAIT_CANCELLED): answers from the worker go to their connections, if
    /// still open (a connection that closed meanwhile is gone from the table,
    /// and its id is never reused).
    func deliver(_ answers: [(id: UInt64, response: HTTPResponse)]) {
        for (id, response) in answers {
            guard let (wsi, connection) = table.connection(id: id), connection.awaitingWorker else { continue }
            connection.awaitingWorker = false
            connection.pendingAnswer = response
            lws_callback_on_writable(wsi)
        }
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

    /// Service thread (inside a callback for `wsi`): the client's address for
    /// lockouts and logs (the peer's, or from a trusted proxy the one it forwards).
    private func client(_ wsi: OpaquePointer, _ headers: [String: String]) -> String {
        RequestHeaders.client(wsi, headers: headers, trusted: options.trustedProxies)
    }

    // MARK: - Headers that stop coming

    /// A request line in and then nothing for this long, with the headers not
    /// complete: the request is answered 400 and closed (see answerStalledHeaders).
    static let stalledHeadersMillis: Int64 = 1000

    /// Service thread (LWS_CALLBACK_WSI_CREATE): before its socket is set, the
    /// first look at whether its headers stalled is armed.
    func connectionCreated(_ wsi: OpaquePointer) {
        lws_set_timer_usecs(wsi, Self.stalledHeadersMillis * 1000)
    }

    /// Service thread (LWS_CALLBACK_TIMER, armed when the connection was made):
    /// a request whose request line came but whose headers stopped coming
    /// for `stalledHeadersMillis` gets 400 and is closed. Real clients send
    /// their headers at once; the ones that stop are a header libwebsockets
    /// 4.1 cannot parse (a name that is a strict prefix of one it knows,
    /// `A: b` or `X-A: 1`: it takes the rest of the headers for that name
    /// and waits for their end for good), or someone holding a header buffer.
    /// Before the request line, lws's own header timeout (5 s) applies.
    func answerStalledHeaders(_ wsi: OpaquePointer) -> Int32 {
        let fd = Int32(lws_get_socket_fd(wsi))
        guard fd >= 0, admission.isUnfinished(fd) else { return 0 }
        let quiet = Int64(sl_socket_quiet_ms(fd))
        guard lws_hdr_total_length(wsi, WSI_TOKEN_HTTP) > 0, quiet >= Self.stalledHeadersMillis else {
            let wait = quiet >= 0 ? max(100, Self.stalledHeadersMillis - quiet) : Self.stalledHeadersMillis
            lws_set_timer_usecs(wsi, wait * 1000)
            return 0
        }
        admission.forget(fd)
        stats.headersStalled()
        logger.info("answering a request whose headers stopped coming", metadata: ["peer": "\(RequestHeaders.peer(wsi))"])
        let answer = HTTPResponse.error(400, "incomplete or unparsable request headers",
                                        detail: "the headers did not end (an empty line) within \(Self.stalledHeadersMillis) ms "
                                            + "of the request line; a header name this server cannot parse (such as 'A:') does that too")
        _ = ResponseWriter.writeWholeBeforeClosing(wsi, answer)
        return -1
    }

    // MARK: - Upgrades

    /// Service thread (LWS_CALLBACK_HTTP_CONFIRM_UPGRADE of a WebSocket): a
    /// WebSocket may open only under a valid Host, from the server's own (or
    /// an allowed) Origin, with a viewer credential when viewing is not open;
    /// otherwise it is answered (421, 403, 401) before any upgrade, and lws
    /// closes it (we return 1).
    func confirmWebSocket(_ wsi: OpaquePointer) -> Int32 {
        let headers = RequestHeaders.headers(wsi)
        let request = HTTPRequest(method: .get, path: RequestHeaders.path(wsi), query: RequestHeaders.query(wsi),
                                  headers: headers, peer: client(wsi, headers))
        if let access {
            if let refusal = access.policy.hostRefusal(request, port: boundPort) ?? access.policy.originRefusal(request)
                ?? access.refusal(for: request, needs: .viewer) {
                return ResponseWriter.writeWholeBeforeClosing(wsi, refusal) ? 1 : -1
            }
        }
        let open: StreamOpener
        switch streams.webSocket(for: request) {
        case .failure(let refused):
            return ResponseWriter.writeWholeBeforeClosing(wsi, refused.response) ? 1 : -1
        case .success(let opener):
            open = opener
        }
        var upgrade = ConnectionTable.Upgrade(open: open)
        // The stream ends if this credential is revoked (see CallbackDispatch.endRevokedStreams).
        upgrade.credential = access?.credential(for: request).credential
        upgrade.credentialCheckedNanos = MonotonicClock.nanos()
        table.upgrades[wsi] = upgrade
        return 0
    }

    /// Service thread (LWS_CALLBACK_HTTP_CONFIRM_UPGRADE of anything else).
    /// HTTP/1.1 only: a request asking to upgrade to anything but a
    /// WebSocket (h2c) is answered as plain HTTP/1.1, whole, here; lws then
    /// completes the transaction (we return 1).
    func answerWithoutUpgrade(_ wsi: OpaquePointer) -> Int32 {
        let method = RequestHeaders.method(of: wsi).method
        let path = RequestHeaders.path(wsi)
        var response = HTTPResponse.error(400, "upgrade refused", detail: "this server speaks HTTP/1.1; send the request without 'Upgrade: h2c'")
        let headers = RequestHeaders.headers(wsi)
        if method == .get || method == .head,
           case .respond(let answer) = router.decide(HTTPRequest(method: method, path: path.isEmpty ? "/" : path,
                                                                 query: RequestHeaders.query(wsi), headers: headers,
                                                                 peer: client(wsi, headers))),
           answer.bodyData != nil {
            response = answer
        }
        return ResponseWriter.writeWholeBeforeClosing(wsi, response) ? 1 : -1
    }
}
