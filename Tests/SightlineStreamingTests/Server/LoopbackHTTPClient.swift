import Foundation
#if canImport(Glibc)
import Glibc
@testable import SightlineStreaming
#endif

/// A plain HTTP/1.1 client over a TCP socket to 127.0.0.1, for tests that
/// talk to a `StreamServer` running in the test process. It sends bytes as
/// given and reads one answer; every read is bounded by a receive timeout.
final class LoopbackHTTPClient {
    struct Answer {
        let status: Int
        /// Lowercase names.
        let headers: [String: String]
        let body: Data
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    enum Failure: Error { case connect(Int32), send, closedBeforeAnswer(Data), timedOut(Data), malformed(Data) }

    private let fd: Int32
    private var buffered = Data()

    init(port: Int, timeoutSeconds: Int = 10) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let error = errno
            close(fd)
            throw Failure.connect(error)
        }
    }

    deinit { close(fd) }

    /// Closes the socket now (the server sees the connection end).
    func shutdownNow() { shutdown(fd, Int32(SHUT_RDWR)) }

    func send(_ text: String, body: Data = Data()) throws {
        var bytes = Data(text.utf8)
        bytes.append(body)
        try bytes.withUnsafeBytes { raw in
            var sent = 0
            while sent < raw.count {
                let n = Glibc.send(fd, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
                guard n > 0 else { throw Failure.send }
                sent += n
            }
        }
    }

    /// `GET`-style request with a Host for `port`, and the extra header lines given.
    func request(_ method: String, _ target: String, port: Int, headers: [String] = [], body: Data = Data()) throws {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
        for line in headers { head += line + "\r\n" }
        if !body.isEmpty { head += "Content-Length: \(body.count)\r\n" }
        try send(head + "\r\n", body: body)
    }

    /// Reads one answer (status line, headers, a Content-Length body; none
    /// when `toHead`, as for a HEAD request).
    func answer(toHead: Bool = false) throws -> Answer {
        let separator = Data("\r\n\r\n".utf8)
        while buffered.range(of: separator) == nil {
            guard try fill() else { throw Failure.closedBeforeAnswer(buffered) }
        }
        let headEnd = buffered.range(of: separator)!
        let head = String(decoding: buffered[..<headEnd.lowerBound], as: UTF8.self)
        buffered = Data(buffered[headEnd.upperBound...])
        let lines = head.components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw Failure.malformed(Data(head.utf8)) }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = toHead ? 0 : Int(headers["content-length"] ?? "0") ?? 0
        while buffered.count < length {
            guard try fill() else { throw Failure.closedBeforeAnswer(buffered) }
        }
        let body = Data(buffered.prefix(length))
        buffered = Data(buffered.dropFirst(length))
        return Answer(status: status, headers: headers, body: body)
    }

    /// Whatever else arrives until the server closes (or the timeout).
    func rest() -> Data {
        while (try? fill()) == true {}
        defer { buffered = Data() }
        return buffered
    }

    /// Whatever else arrives until the server closes; nil when the receive
    /// timeout passed with the connection still open.
    func untilClosed() -> Data? {
        do {
            while try fill() {}
        } catch {
            return nil
        }
        defer { buffered = Data() }
        return buffered
    }

    /// Reads until `marker` has arrived (true), or the server closed or the timeout passed (false).
    func waitFor(_ marker: String) -> Bool {
        let bytes = Data(marker.utf8)
        while buffered.range(of: bytes) == nil {
            guard (try? fill()) == true else { return false }
        }
        return true
    }

    /// False when the peer closed; throws on a receive timeout.
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = recv(fd, &chunk, chunk.count, 0)
        if n > 0 {
            buffered.append(contentsOf: chunk[..<n])
            return true
        }
        if n == 0 { return false }
        if errno == EAGAIN || errno == EWOULDBLOCK { throw Failure.timedOut(buffered) }
        return false
    }
}
