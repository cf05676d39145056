import CSightlineLWS

/// Notices a client that left an HTTP answer which never ends (an MJPEG
/// stream), whether or not frames flow, and keeps the service thread idle
/// while such a stream has nothing to send.
///
/// libwebsockets 4.1 neither reads nor closes the socket of an HTTP answer
/// still being written: once the client left, poll reported POLLIN (its FIN;
/// POLLIN|POLLERR|POLLHUP after a reset) on every turn, about 46,000 times a
/// second with no read or close in between (strace), so the service thread
/// spun at a full core and the socket sat in CLOSE-WAIT until a write failed,
/// which never came while the camera had no signal (issue 38: 200 departures,
/// 200 CLOSE-WAIT sockets, the thread at 99.7 %). So:
/// - while a stream has nothing to send, its POLLIN is off (`pause`: lws's rx
///   flow control; a streaming client sends nothing more, what it might send
///   stays in the kernel). In lws 4.1 an h1 server connection under rx flow
///   control gets no writeable callback either (ops-h1.c returns before its
///   POLLOUT handling), so it is turned on again (`resume`) before one is
///   asked for, and off only when nothing is left in lws's own send buffer;
/// - a timer asks the socket every `intervalMillis` whether its peer has gone
///   (`sl_socket_peer_gone`: CLOSE-WAIT after a FIN, CLOSE after a reset), and
///   a gone peer's connection is closed by returning -1 from LWS_CALLBACK_TIMER.
///
/// Service thread only (inside callbacks; `wsi` is a stream's connection).
enum DepartureWatch {
    /// How often a stream's socket is asked; a departed client's socket is closed within this.
    static let intervalMillis: Int64 = 250

    /// Service thread: the answer on `wsi` has become an endless stream: the looks begin.
    static func start(_ wsi: OpaquePointer) {
        lws_set_timer_usecs(wsi, intervalMillis * 1000)
    }

    /// Service thread: the stream has sent what it had (lws holds nothing unsent): no POLLIN until `resume`.
    static func pause(_ wsi: OpaquePointer) {
        _ = lws_rx_flow_control(wsi, 0)
    }

    /// Service thread: before asking for a writeable callback for the stream.
    static func resume(_ wsi: OpaquePointer) {
        _ = lws_rx_flow_control(wsi, 1)
    }

    /// Service thread (LWS_CALLBACK_TIMER of a stream): -1 (close it) when the
    /// peer has gone, else 0 with the next look armed.
    static func check(_ wsi: OpaquePointer) -> Int32 {
        let fd = lws_get_socket_fd(wsi)
        if fd < 0 || sl_socket_peer_gone(fd) != 0 { return -1 }
        lws_set_timer_usecs(wsi, intervalMillis * 1000)
        return 0
    }
}
