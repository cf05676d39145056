// libFuzzer target: requests and forms as libwebsockets reads them, through a
// live in-process StreamServer on a loopback port: the input is either a whole
// raw request (first byte odd) or the body of a multipart upload (first byte
// even) parsed by lws_spa into the fields and file a handler gets. The server
// must answer or close, never crash, and keep answering. Built by `make fuzz`.
import Foundation
import Logging
@testable import SightlineCore
@testable import SightlineVision
@testable import SightlineSupport
@testable import SightlinePipeline
@testable import SightlineHTTP
@testable import SightlineEvents

let boundary = "fuzzboundary"
let echo: Route.Handler = { request in
    .json(["fields": request.form?.fields.count ?? -1, "file": request.form?.file?.count ?? -1, "body": request.body.count])
}
let server: StreamServer = {
    var options = StreamServer.Options()
    options.host = "127.0.0.1"
    options.port = 0
    options.maxBodyBytes = 1 << 20
    var logger = Logger(label: "fuzz")
    logger.logLevel = .critical
    let auth = AuthGuard(tokens: TokenStore(fixed: [(name: "admin", role: .admin, token: "s3cret")]),
                         policy: AccessPolicy(viewOpen: true, loopbackBound: true))
    let router = Router(routes: [
        Route(.post, "/api/form", access: .viewer, .worker, handler: echo),
        Route(.get, "/api/state", access: .viewer, handler: echo),
    ], authorize: { auth.refusal(for: $0, needs: $1) })
    let server = StreamServer(options: options, frames: LatestFrameSlot(), stats: PipelineStats(), logger: logger,
                              router: router, worker: RequestWorker())
    try! server.start()
    return server
}()

/// Sends `bytes`, half-closes, and reads until the server closes or `seconds` pass.
/// libFuzzer's `-timeout` watchdog is a SIGALRM every second, so a socket call may
/// return EINTR: each one is retried (without that, about one check in a few
/// thousand read an empty answer and reported a server that was fine), a read only
/// while `seconds` have not passed since the last bytes came (a retried read would
/// otherwise restart its own timeout at every alarm and never give up).
func exchange(_ bytes: [UInt8], seconds: Int = 1) -> [UInt8] {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { fatalError("no socket") }
    defer { close(fd) }
    var timeout = timeval(tv_sec: seconds, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(server.boundPort).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { address -> Int32 in
            while true {
                let result = connect(fd, address, socklen_t(MemoryLayout<sockaddr_in>.size))
                if result == 0 || errno != EINTR { return result }
                // An interrupted connect goes on in the background: wait until it is writable.
                var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                while poll(&poller, 1, 5000) < 0 && errno == EINTR {}
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
                return error == 0 ? 0 : -1
            }
        }
    }
    guard connected == 0 else { fatalError("the server stopped accepting connections") }
    bytes.withUnsafeBytes { raw in
        var offset = 0
        while offset < raw.count {
            let sent = send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
            if sent < 0 && errno == EINTR { continue }
            if sent <= 0 { break }
            offset += sent
        }
    }
    shutdown(fd, Int32(SHUT_WR))
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    var lastBytes = Date()
    while answer.count < 1 << 20 {
        let got = recv(fd, &buffer, buffer.count, 0)
        if got < 0 && errno == EINTR && Date().timeIntervalSince(lastBytes) < Double(seconds) { continue }
        if got <= 0 { break }
        answer += buffer[0..<got]
        lastBytes = Date()
    }
    return answer
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzForms(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let input = [UInt8](UnsafeRawBufferPointer(start: start, count: count))
    guard let first = input.first else { return 0 }
    let payload = Array(input.dropFirst())
    let request: [UInt8]
    if first & 1 == 1 {
        request = payload
    } else {
        let head = "POST /api/form HTTP/1.1\r\nHost: 127.0.0.1:\(server.boundPort)\r\n"
            + "Content-Type: multipart/form-data; boundary=\(boundary)\r\nContent-Length: \(payload.count)\r\n"
            + "Connection: close\r\n\r\n"
        request = Array(head.utf8) + payload
    }
    let answer = exchange(request)
    if let line = String(bytes: answer.prefix(16), encoding: .ascii), line.hasPrefix("HTTP/1.1 5"),
       !line.hasPrefix("HTTP/1.1 503") {
        fatalError("a 5xx answer: \(line)")
    }
    // The server keeps serving: a plain request after every input.
    let began = Date()
    let check = exchange(Array("GET /api/state HTTP/1.1\r\nHost: 127.0.0.1:\(server.boundPort)\r\nConnection: close\r\n\r\n".utf8),
                         seconds: 10)
    guard String(bytes: check.prefix(12), encoding: .ascii) == "HTTP/1.1 200" else {
        fatalError("the server stopped answering after an input of \(count) bytes (the check took "
                   + "\(String(format: "%.3f", Date().timeIntervalSince(began))) s): "
                   + String(decoding: check.prefix(200), as: UTF8.self))
    }
    return 0
}

// SwiftPM links executables with main renamed to <module>_main (for testable
// executables); libFuzzer's own main is then not linked, so this one starts it.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(_ argc: UnsafeMutablePointer<CInt>,
                     _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                     _ callback: @convention(c) (UnsafeRawPointer, Int) -> CInt) -> CInt

@_cdecl("FuzzForms_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return runFuzzerDriver(&count, &arguments) { fuzzForms($0, $1) }
}
