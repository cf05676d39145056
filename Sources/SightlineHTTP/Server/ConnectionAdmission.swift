import CSightlineLWS
import Foundation
import SightlineSupport

/// Which new connections get in, so idle sockets cannot take the header
/// buffers everyone needs: a connection counts as unfinished from its
/// accept until its request headers are in (or it closes); an address with
/// `maxUnfinishedPerAddress` unfinished ones is refused more, and when
/// `maxUnfinished` are unfinished in all, the oldest is evicted. A trusted
/// reverse proxy (`TrustedProxies`), which carries every viewer behind it, is
/// held only to the global limit. A refused connection is answered 503 (with
/// Retry-After and the JSON error body) on its socket before it is closed.
///
/// Service thread only (owned by `CallbackDispatch`).
final class ConnectionAdmission {
    private let maxUnfinishedPerAddress: Int
    private let maxUnfinished: Int
    private let trustedProxies: TrustedProxies
    private let refusal: [UInt8]
    private let stats: ServerStats
    /// Connections that have not finished their headers: address and admission order by socket, and count by address.
    private var unfinished: [Int32: (address: String, order: UInt64)] = [:]
    private var unfinishedCount: [String: Int] = [:]
    private var admissions: UInt64 = 0

    init(maxUnfinishedPerAddress: Int, maxUnfinished: Int, trustedProxies: TrustedProxies = TrustedProxies(),
         stats: ServerStats) {
        self.maxUnfinishedPerAddress = maxUnfinishedPerAddress
        self.maxUnfinished = maxUnfinished
        self.trustedProxies = trustedProxies
        refusal = Self.refusal(limit: maxUnfinishedPerAddress)
        self.stats = stats
    }

    /// Service thread (LWS_CALLBACK_FILTER_NETWORK_CONNECTION): a new TCP
    /// connection, before anything is read. Refused (closed) when its address
    /// already has `maxUnfinishedPerAddress` connections that have not
    /// finished their request headers; when `maxUnfinished` are unfinished in
    /// all, the oldest of them is evicted to make room, so a newcomer is
    /// never locked out by sockets held open.
    func admit(_ user: UnsafeMutableRawPointer?) -> Int32 {
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
        forget(fd)
        let trusted = trustedProxies.contains(address)
        if (unfinishedCount[address, default: 0] >= maxUnfinishedPerAddress && !trusted) || unfinished.count >= maxUnfinished {
            forgetClosed(acceptedOn: Self.localPort(fd))
        }
        let count = unfinishedCount[address, default: 0]
        if count >= maxUnfinishedPerAddress && !trusted {
            stats.connectionRefused()
            refuse(fd)
            return 1
        }
        if unfinished.count >= maxUnfinished { evictOldest() }
        unfinishedCount[address] = count + 1
        admissions += 1
        unfinished[fd] = (address, admissions)
        return 0
    }

    /// The answer a refused connection gets, whole, before lws closes it.
    static func refusal(limit: Int) -> [UInt8] {
        let body = #"{"error": "too many connections", "detail": "this address has \#(limit) connections that have not sent "#
            + #"their request yet; try again in a moment (behind a reverse proxy, list it in access.trustedProxies)"}"#
        return Array(("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
                      + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body).utf8)
    }

    /// Service thread: writes `refusal` on a socket lws is about to close,
    /// without blocking (a new socket's buffer takes it whole), ends the
    /// sending side, and reads away what the client sent already, so the
    /// close is a FIN that lets the answer be read, not a reset that drops it.
    private func refuse(_ fd: Int32) {
        _ = refusal.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
        shutdown(fd, Int32(SHUT_WR))
        var scratch = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<4 where recv(fd, &scratch, scratch.count, Int32(MSG_DONTWAIT)) > 0 {}
    }

    /// Service thread: shuts down the socket of the connection that has waited
    /// longest for its headers; lws sees the hang-up on its next poll and closes
    /// it, freeing its header buffer. It stops counting as unfinished now.
    private func evictOldest() {
        guard let oldest = unfinished.min(by: { $0.value.order < $1.value.order })?.key else { return }
        forget(oldest)
        shutdown(oldest, Int32(SHUT_RDWR))
        stats.connectionEvicted()
    }

    /// Service thread: forgets the unfinished connections that are gone.
    /// lws closes a socket before it reports the connection's end
    /// (WSI_DESTROY comes with the socket already invalid), so a connection
    /// that closed before its headers came is known only by its number. That
    /// number is given back when an accept reuses it (`admit`), but when a
    /// lower one is free (a finished connection, a file closed) every new
    /// connection gets that one instead: 16 closed before their headers
    /// locked their address out for good. So before refusing or evicting,
    /// each one still counted is checked to be what it was: a socket
    /// accepted on the server's port (`port`), connected to its address.
    private func forgetClosed(acceptedOn port: UInt16?) {
        for (fd, entry) in unfinished where !Self.isConnection(fd, from: entry.address, acceptedOn: port) {
            forget(fd)
        }
    }

    /// Any thread (pure): whether `fd` is a connected socket whose local port
    /// is `port` and whose peer is `address`.
    static func isConnection(_ fd: Int32, from address: String, acceptedOn port: UInt16?) -> Bool {
        guard let port, localPort(fd) == port, var peer = socketAddress(fd, getpeername) else { return false }
        let known = withUnsafePointer(to: &peer) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { addressText($0) } }
        return known == address
    }

    /// Any thread (pure): the local port of the socket `fd` (nil when it is not an IP socket).
    static func localPort(_ fd: Int32) -> UInt16? {
        guard var local = socketAddress(fd, getsockname) else { return nil }
        switch Int32(local.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) } }
        case AF_INET6:
            return withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) } }
        default:
            return nil
        }
    }

    /// Any thread (pure): the address `call` (getsockname or getpeername) gives for `fd`, nil when it fails.
    private static func socketAddress(_ fd: Int32,
                                      _ call: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32)
        -> sockaddr_storage? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let read = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(fd, $0, &length) == 0 }
        }
        return read ? storage : nil
    }

    /// Service thread: a connection finished its headers (or closed).
    func headersFinished(_ wsi: OpaquePointer) {
        forget(Int32(lws_get_socket_fd(wsi)))
    }

    /// Service thread: whether the socket is still waiting for its headers.
    func isUnfinished(_ fd: Int32) -> Bool {
        unfinished[fd] != nil
    }

    /// Service thread: the socket no longer counts as unfinished.
    func forget(_ fd: Int32) {
        guard let address = unfinished.removeValue(forKey: fd)?.address else { return }
        let left = unfinishedCount[address, default: 1] - 1
        unfinishedCount[address] = left > 0 ? left : nil
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
}
