import CSightlineLWS
import Foundation

/// Writes HTTP answers: the head (with the security and CORS headers), a
/// short body at once or a long one `chunkBytes` per writeable callback,
/// then ends the exchange (close, or wait for the next request on a
/// kept-alive connection). An endless answer's head goes out here and its
/// body is the `StreamProvider`'s session's.
///
/// Service thread only (owned by `CallbackDispatch`).
final class ResponseWriter {
    private let chunkBytes: Int
    private let streams: any StreamProvider

    init(chunkBytes: Int, streams: any StreamProvider) {
        self.chunkBytes = chunkBytes
        self.streams = streams
    }

    /// Service thread: writes an answer's head and starts its body (or the
    /// endless stream); the rest goes out on writeable callbacks.
    func respond(_ wsi: OpaquePointer, _ connection: Connection, _ answer: HTTPResponse) -> Int32 {
        var response = answer
        response.headers += Self.securityHeaders(host: connection.requestHost) + connection.corsHeaders
        switch response.body {
        case .stream where connection.headOnly:
            // A HEAD of a stream: its head, then the connection closes (a stream has no length).
            connection.closeAfterResponse = true
            guard Self.writeHead(wsi, response.status, response.contentType, -1, response.headers) else { return -1 }
            return finishExchange(wsi, connection)
        case .stream(let what):
            guard Self.writeHead(wsi, response.status, response.contentType, -1, response.headers) else { return -1 }
            startBodyStream(wsi, connection, what)
            return 0
        case .data(let body):
            var headers = response.headers
            if connection.closeAfterResponse { headers.append(("connection:", "close")) }
            let length = connection.headOnly ? (response.headLength ?? body.count) : body.count
            guard Self.writeHead(wsi, response.status, response.contentType, Int64(length), headers) else { return -1 }
            // A HEAD gets the length a GET would, and no body.
            if body.isEmpty || connection.headOnly { return finishExchange(wsi, connection) }
            if body.count <= chunkBytes {
                // A short answer goes out whole now (libwebsockets keeps what
                // the socket does not take), so the exchange ends here and
                // lws itself skips any body the request still has coming.
                guard Self.write(wsi, body, LWS_WRITE_HTTP_FINAL) else { return -1 }
                return finishExchange(wsi, connection)
            }
            connection.responseBody = body
            connection.responseOffset = 0
            lws_callback_on_writable(wsi)
            return 0
        }
    }

    /// Service thread: an endless answer's head is out; the connection is a
    /// stream from now on, under the credential its request presented, and
    /// its body is the provider's session's.
    private func startBodyStream(_ wsi: OpaquePointer, _ connection: Connection, _ what: any Sendable) {
        connection.role = .bodyStream
        connection.credential = connection.streamCredential
        let socket = StreamSocket(wsi: wsi, id: connection.id, kind: .httpBody)
        connection.session = streams.bodyStream(what, path: connection.requestPath)(socket)
        // lws would not notice the client leave (see DepartureWatch).
        DepartureWatch.start(wsi)
        socket.askWriteable()
    }

    /// Service thread: the next `chunkBytes` of an answer's body.
    func writeBody(_ wsi: OpaquePointer, _ connection: Connection) -> Int32 {
        let body = connection.responseBody
        guard connection.responseOffset < body.count else { return 0 }
        let end = min(body.count, connection.responseOffset + chunkBytes)
        let last = end == body.count
        let chunk = body.subdata(in: connection.responseOffset..<end)
        guard Self.write(wsi, chunk, last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) else { return -1 }
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

    /// Service thread: an answer written whole, head (with `Connection: close`)
    /// and body, outside the usual exchange (a refused upgrade, stalled
    /// headers); the caller then has lws close the connection. False when the
    /// connection failed.
    static func writeWholeBeforeClosing(_ wsi: OpaquePointer, _ response: HTTPResponse) -> Bool {
        let body = response.bodyData ?? Data()
        guard writeHead(wsi, response.status, response.contentType, Int64(body.count),
                        response.headers + [("connection:", "close")]) else { return false }
        return body.isEmpty || write(wsi, body, LWS_WRITE_HTTP_FINAL)
    }

    /// Any thread (pure). On every answer: the page may load only its own scripts, styles and
    /// images (and media from its own MSE object URLs) and talk only to its own server (and its WebSocket), may not be
    /// framed, and sends no referrer; browsers must not guess content types.
    static func securityHeaders(host: String) -> [(String, String)] {
        let sockets = host.isEmpty || host.contains(where: { $0 == " " || $0 == ";" || $0 == "," || $0 == "'" })
            ? "" : " ws://\(host) wss://\(host)"
        return [
            ("content-security-policy:", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; media-src 'self' blob:; "
                + "connect-src 'self'\(sockets); object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"),
            ("x-content-type-options:", "nosniff"),
            ("referrer-policy:", "no-referrer"),
            ("x-frame-options:", "DENY"),
        ]
    }

    /// Service thread: writes the status line and headers; names end in ':'.
    private static func writeHead(_ wsi: OpaquePointer, _ status: Int, _ contentType: String, _ length: Int64,
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

    /// The headroom lws_write needs before the bytes it sends.
    private static let pre = Int(sl_lws_pre())

    /// Service thread: lws_write with the LWS_PRE headroom it needs (HTTP
    /// bodies, MJPEG parts, WebSocket messages); false when the connection failed.
    static func write(_ wsi: OpaquePointer, _ data: Data, _ protocolType: lws_write_protocol) -> Bool {
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: pre + data.count)
        defer { buffer.deallocate() }
        data.copyBytes(to: buffer + pre, count: data.count)
        return lws_write(wsi, buffer + pre, data.count, protocolType) >= data.count
    }
}
