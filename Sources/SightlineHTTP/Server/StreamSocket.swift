import CSightlineLWS
import Foundation

/// A streaming connection as the streaming layer sees it: a WebSocket viewer,
/// or an HTTP answer that never ends (an MJPEG stream). It writes messages or
/// body bytes and asks for the next writeable callback; libwebsockets stays
/// behind it.
///
/// Service thread only: made by the server inside a callback and valid for
/// that connection's life (`StreamSession.closed` ends it).
public struct StreamSocket {
    public enum Kind: Sendable { case webSocket, httpBody }
    /// What a message is, on a WebSocket (an HTTP body's bytes are all `binary`).
    public enum Message: Sendable { case text, binary }
    /// Why a WebSocket is closed (RFC 6455's codes).
    public enum CloseStatus: Sendable {
        /// 1001: what it streamed is gone (a removed camera).
        case goingAway
        /// 1008.
        case policyViolation
    }

    let wsi: OpaquePointer
    /// The connection's id, unique for the server's life.
    public let id: UInt64
    public let kind: Kind

    init(wsi: OpaquePointer, id: UInt64, kind: Kind) {
        self.wsi = wsi
        self.id = id
        self.kind = kind
    }

    /// Service thread: writes a whole message (or body bytes); false when the connection failed.
    public func write(_ data: Data, as message: Message) -> Bool {
        let type: lws_write_protocol = switch (kind, message) {
        case (.httpBody, _): LWS_WRITE_HTTP
        case (.webSocket, .text): LWS_WRITE_TEXT
        case (.webSocket, .binary): LWS_WRITE_BINARY
        }
        return ResponseWriter.write(wsi, data, type)
    }

    /// Service thread: a writeable callback when the socket can take more. An
    /// HTTP body stream's reading is turned back on first, without which lws
    /// 4.1 gives none (see `DepartureWatch`).
    public func askWriteable() {
        if kind == .httpBody { DepartureWatch.resume(wsi) }
        lws_callback_on_writable(wsi)
    }

    /// Whether lws still holds bytes of the last write that the socket has not taken.
    public var isChoked: Bool { lws_send_pipe_choked(wsi) != 0 }

    /// The client's address and port, for log lines.
    public var peer: String { RequestHeaders.peer(wsi) }

    /// Bounds the bytes the kernel may hold unsent (TCP_NOTSENT_LOWAT): beyond
    /// them the socket is not writeable, so a slow link's backlog stays with
    /// the caller. False (with errno) when the socket refused.
    public func limitUnsentBytes(_ bytes: Int32) -> Bool {
        var lowat = bytes
        let fd = lws_get_socket_fd(wsi)
        return fd >= 0 && setsockopt(fd, Int32(IPPROTO_TCP), Self.tcpNotsentLowat, &lowat, socklen_t(MemoryLayout<Int32>.size)) == 0
    }

    /// Linux's TCP_NOTSENT_LOWAT (netinet/tcp.h), which Glibc's Swift module does not export.
    static let tcpNotsentLowat: Int32 = 25

    /// Service thread: the status and reason a WebSocket closes with, when the
    /// session's writeable callback then returns false.
    public func setCloseReason(_ status: CloseStatus, _ reason: String) {
        guard kind == .webSocket else { return }
        var bytes = Array(reason.utf8)
        let code = switch status {
        case .goingAway: LWS_CLOSE_STATUS_GOINGAWAY
        case .policyViolation: LWS_CLOSE_STATUS_POLICY_VIOLATION
        }
        lws_close_reason(wsi, code, &bytes, bytes.count)
    }
}
