import Foundation

/// What the server remembers about one connection. Owned by the lws
/// service thread (`ConnectionTable`); never touched elsewhere.
final class Connection {
    /// `bodyStream`: an HTTP answer that never ends (an MJPEG stream).
    enum Role { case http, webSocket, bodyStream }

    var role: Role
    /// Unique for the server's life, so a worker's answer never reaches
    /// another connection that reuses this one's lws handle.
    let id: UInt64
    /// The HTTP request being received (until its body is complete).
    var request: HTTPRequest?
    /// libwebsockets reported this exchange's body complete (see
    /// `RequestReader.bodyCompleted`).
    var bodyCompleted = false
    /// Body bytes received so far for `request`.
    var bodyBytes = 0
    /// A form body being parsed by lws_spa as it arrives.
    var form: FormCollector?
    /// A slow route is running on the worker for this connection.
    var awaitingWorker = false
    /// The worker's answer, written on the next writeable callback.
    var pendingAnswer: HTTPResponse?
    /// CORS headers for this request's allowed foreign origin (usually none).
    var corsHeaders: [(String, String)] = []
    /// The Host the request came by (for the page's Content-Security-Policy).
    var requestHost = ""
    /// The path of the request whose answer is being written (an endless
    /// answer's tells its `StreamProvider` what it streams).
    var requestPath = ""
    /// A stream's sender (`/ws`, an MJPEG answer), from the `StreamProvider`.
    var session: (any StreamSession)?
    /// The credential the current request presented (kept if it becomes a stream).
    var streamCredential: Credential?
    /// A stream's credential; when it is revoked the stream is closed.
    var credential: Credential?
    /// When the credential (`streamCredential`, or the WebSocket's) was
    /// checked against the token store (`MonotonicClock.nanos`; see `RevocationNotice`).
    var credentialCheckedNanos: UInt64 = 0
    var revoked = false
    /// The HTTP response body being written, and how far.
    var responseBody = Data()
    var responseOffset = 0
    var closeAfterResponse = false
    /// The request is a HEAD: its answer goes out without the body.
    var headOnly = false

    /// What the socket had received when this connection's last request's
    /// headers were in (RequestReader.arrivedHeaderBytes measures the next from it).
    var receivedThroughHeaders = 0

    /// WebSocket: bytes of the incoming message so far.
    var incomingMessageBytes = 0

    init(role: Role, id: UInt64) {
        self.role = role
        self.id = id
    }

    /// Ready for the next HTTP request on a kept-alive connection.
    func resetExchange() {
        request = nil
        bodyCompleted = false
        bodyBytes = 0
        form = nil
        awaitingWorker = false
        pendingAnswer = nil
        responseBody = Data()
        responseOffset = 0
        closeAfterResponse = false
        headOnly = false
    }
}
