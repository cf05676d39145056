/// One streaming connection's sender, made by the `StreamProvider` when a
/// WebSocket opens or an endless HTTP answer starts: it decides what is due
/// and writes it through the connection's `StreamSocket`. The server keeps
/// the connection (its credential, revocation, the bytes a client sends);
/// the session keeps what it streams.
///
/// Service thread only: made, called and dropped inside the server's callbacks.
public protocol StreamSession: AnyObject {
    /// A wake-up (new frames may be out, a camera may be gone): ask
    /// `socket.askWriteable()` when something is due.
    func woken(_ socket: StreamSocket)
    /// The socket can take more: write what is due. False closes the
    /// connection (a WebSocket with the reason set by `setCloseReason`).
    func writeable(_ socket: StreamSocket) -> Bool
    /// The connection closed.
    func closed()
}

/// Makes a session for a connection once it is a stream.
public typealias StreamOpener = (StreamSocket) -> any StreamSession

/// What the server streams, as the streaming layer provides it: which
/// WebSocket paths exist, what a WebSocket upgrade gets, and the sender of
/// an endless HTTP answer a route asked for (`HTTPResponse.Body.stream`).
///
/// `Sendable`: the server holds it from any thread; the openers it returns
/// are used on the service thread only.
public protocol StreamProvider: Sendable {
    /// Service thread (before the upgrade's headers are read): whether `path` is a WebSocket stream.
    func acceptsWebSocket(path: String) -> Bool
    /// Service thread (the upgrade, after the access checks passed): the
    /// session's opener, or the answer that refuses it (404, 400).
    func webSocket(for request: HTTPRequest) -> Result<StreamOpener, StreamRefusal>
    /// Service thread (the answer's head is out): the session for an answer
    /// whose body is `.stream(what)`, to `request path`.
    func bodyStream(_ what: any Sendable, path: String) -> StreamOpener
}

/// A WebSocket upgrade the provider refuses, with its answer.
public struct StreamRefusal: Error {
    public let response: HTTPResponse
    public init(_ response: HTTPResponse) {
        self.response = response
    }
}
