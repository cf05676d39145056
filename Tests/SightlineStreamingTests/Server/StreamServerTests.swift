import Foundation
import Logging
import Synchronization
import Testing
@testable import SightlineSupport
@testable import SightlinePipeline
@testable import SightlineHTTP
@testable import SightlineStreaming
import SightlineTesting
import SightlineHTTPTesting

/// A `StreamServer` running in the test process on a free loopback port,
/// with a route table made for the test, and real sockets talking to it:
/// what the server does between libwebsockets and the router (headers,
/// the worker's answers, lws's timeouts), which the router tests cannot see.
@Suite(.serialized) struct StreamServerTests {
    /// Starts a server with `routes`; `configure` may change its options.
    static func serve(_ routes: [Route], worker: RequestWorker = RequestWorker(),
                      configure: (inout StreamServer.Options) -> Void = { _ in }) throws -> StreamServer {
        var options = StreamServer.Options()
        options.host = "127.0.0.1"
        options.port = 0
        configure(&options)
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        let auth = AuthGuard.testing()
        let router = Router(routes: routes, authorize: { auth.refusal(for: $0, needs: $1) })
        let streams = CameraStreams(cameras: [CameraFeed(name: "camera", frames: LatestFrameSlot(), stats: PipelineStats())],
                                    logger: logger)
        let server = StreamServer(options: options, streams: streams, logger: logger, router: router, worker: worker)
        try server.start()
        return server
    }

    @Test func everyHeaderLibwebsocketsKnowsReachesTheHandler() throws {
        let server = try Self.serve([Route(.get, "/api/echo", access: .viewer) { request in
            .json(request.headers.merging(["query.name": request.query["name"] ?? "-",
                                           "query.after": request.query["after"] ?? "-"]) { a, _ in a })
        }])
        defer { server.stop() }
        let client = try LoopbackHTTPClient(port: server.boundPort)
        let long = String(repeating: "x", count: 1500)
        try client.request("GET", "/api/echo?name=my%20logo&long=\(long)&after=%C3%A9t%C3%A9+1", port: server.boundPort, headers: [
            "If-None-Match: \"abc\"", "Cookie: sightline_session=xyz", "Accept-Language: de-CH",
            "User-Agent: sightline-test/1", "If-Modified-Since: Sat, 01 Jan 2000 00:00:00 GMT", "Range: bytes=0-9",
            "Cache-Control: no-cache", "Referer: http://127.0.0.1/", "Authorization: Bearer s3cret",
        ])
        let answer = try client.answer()
        #expect(answer.status == 200)
        let headers = try #require(try JSONSerialization.jsonObject(with: answer.body) as? [String: String])
        #expect(headers["if-none-match"] == "\"abc\"")
        #expect(headers["cookie"] == "sightline_session=xyz")
        #expect(headers["accept-language"] == "de-CH")
        #expect(headers["user-agent"] == "sightline-test/1")
        #expect(headers["if-modified-since"] == "Sat, 01 Jan 2000 00:00:00 GMT")
        #expect(headers["range"] == "bytes=0-9")
        #expect(headers["cache-control"] == "no-cache")
        #expect(headers["referer"] == "http://127.0.0.1/")
        #expect(headers["authorization"] == "Bearer s3cret")
        #expect(headers["host"] == "127.0.0.1:\(server.boundPort)")
        // The query is decoded by lws, in full, also after a long argument.
        #expect(headers["query.name"] == "my logo")
        #expect(headers["query.after"] == "été 1")
        // Names are lowercase without the colon, and no pseudo-entries (the
        // request line's own tokens such as "get " or ":path") appear.
        #expect(headers.keys.allSatisfy { $0 == $0.lowercased() && !$0.hasSuffix(":") && !$0.hasPrefix(":") && !$0.contains(" ") })
    }

    @Test func headGetsTheHeadAndLengthButNoBodyOnAKeptAliveConnection() throws {
        let server = try Self.serve([
            Route(.get, "/api/quick", access: .viewer) { _ in .text("quick body") },
            Route(.get, "/api/slow", access: .viewer, .worker) { _ in .text("worker body") },
        ])
        defer { server.stop() }
        let client = try LoopbackHTTPClient(port: server.boundPort)
        // Each HEAD is followed on the same connection by a GET: a body sent
        // after a HEAD would be read as the next answer's status line.
        for path in ["/api/quick", "/api/slow"] {
            try client.request("HEAD", path, port: server.boundPort)
            try client.request("GET", path, port: server.boundPort)
            let head = try client.answer(toHead: true)
            let get = try client.answer()
            #expect(head.status == 200 && get.status == 200, "\(path)")
            #expect(head.headers["content-length"] == "\(get.body.count)", "\(path)")
            #expect(get.text.hasSuffix("body"), "\(path)")
        }
    }

    @Test func aBodyMethodWithoutContentLengthIsAnsweredThenClosed() throws {
        // lws 4.1 would wait for up to 100 MiB of body here and swallow the
        // next request as part of it; the answer says the connection closes.
        let server = try Self.serve([Route(.post, "/api/thing", access: .admin) { request in
            .text("body of \(request.body.count) bytes")
        }, Route(.get, "/api/quick", access: .viewer) { _ in .text("quick") }])
        defer { server.stop() }
        let client = try LoopbackHTTPClient(port: server.boundPort)
        try client.request("POST", "/api/thing", port: server.boundPort, headers: ["Authorization: Bearer s3cret"])
        try client.request("GET", "/api/quick", port: server.boundPort)
        let answer = try client.answer()
        #expect(answer.status == 200 && answer.text == "body of 0 bytes")
        #expect(answer.headers["connection"] == "close")
        #expect(client.rest().isEmpty)
        // With a length, the body is read and answered, and that answer is
        // the connection's last too (see the pipelining test below).
        let sized = try LoopbackHTTPClient(port: server.boundPort)
        try sized.request("POST", "/api/thing", port: server.boundPort, headers: ["Authorization: Bearer s3cret"], body: Data("abc".utf8))
        let sizedAnswer = try sized.answer()
        #expect(sizedAnswer.text == "body of 3 bytes" && sizedAnswer.headers["connection"] == "close")
        #expect(sized.rest().isEmpty)
    }

    @Test func aBodyIsNeverTakenFromItsOwnRequestLine() {
        func check(_ body: String, _ method: HTTPRequest.Method = .post) -> Bool {
            Array(body.utf8).withUnsafeBytes { RequestReader.isOwnRequestLine($0, method: method) }
        }
        #expect(check("POST /api/templates HTTP/1.1\r\n"))
        #expect(check("POS"))
        #expect(check("PUT /x", .put))
        #expect(!check("{\"token\": \"POST /\"}"))
        #expect(!check("--boundary\r\n"))
        #expect(!check("name=POST+%2F"))
        #expect(!check("POST /", .put))
        #expect(!check(""))
    }

    @Test func requestsPipelinedBehindABodyEndTheConnectionNotTheServer() throws {
        // libwebsockets 4.1 feeds bytes pipelined behind a request body to a
        // loop that never returned to poll: one client's packet kept the
        // service thread busy and every other client waiting (FuzzForms).
        let server = try Self.serve([
            Route(.post, "/api/thing", access: .admin) { request in .text("body \(String(decoding: request.body, as: UTF8.self))") },
            Route(.post, "/api/slow", access: .admin, .worker) { request in
                Thread.sleep(forTimeInterval: 0.3)
                return .text("slow body of \(request.body.count) bytes")
            },
            Route(.get, "/api/quick", access: .viewer) { _ in .text("quick") },
        ])
        defer { server.stop() }
        let port = server.boundPort
        let host = "Host: 127.0.0.1:\(port)\r\n"
        let quick = "GET /api/quick HTTP/1.1\r\n\(host)\r\n"
        func post(_ path: String) -> String {
            "POST \(path) HTTP/1.1\r\n\(host)Authorization: Bearer s3cret\r\nContent-Length: 3\r\n\r\nabc"
        }
        // lws 4.1 gives a request pipelined behind another its own head as
        // its body: it is refused, and the connection closes after.
        let client = try LoopbackHTTPClient(port: port)
        try client.send(quick + post("/api/thing") + quick + quick)
        #expect(try client.answer().text == "quick")
        let refused = try client.answer()
        #expect(refused.status == 400 && refused.headers["connection"] == "close", "\(refused.text)")
        #expect(client.rest().isEmpty)
        // First on its connection, the body arrives whole, even with requests pipelined behind it.
        let first = try LoopbackHTTPClient(port: port)
        try first.send(post("/api/thing") + quick + quick)
        let bodyAnswer = try first.answer()
        #expect(bodyAnswer.text == "body abc" && bodyAnswer.headers["connection"] == "close", "\(bodyAnswer.text)")
        #expect(first.rest().isEmpty)
        // After an answer, on the same connection, it arrives whole too.
        let sequential = try LoopbackHTTPClient(port: port)
        try sequential.send(quick)
        #expect(try sequential.answer().text == "quick")
        try sequential.send(post("/api/thing"))
        #expect(try sequential.answer().text == "body abc")
        // Answered by the worker with requests pipelined behind: the
        // connection closes (its answer cannot wait behind those bytes).
        let pipelined = try LoopbackHTTPClient(port: port)
        try pipelined.send(post("/api/slow") + quick)
        let leftover = String(decoding: pipelined.rest(), as: UTF8.self)
        #expect(!leftover.contains("quick"))
        // A GET that declares a body is answered, then its connection closes.
        let getWithBody = try LoopbackHTTPClient(port: port)
        try getWithBody.send("GET /api/quick HTTP/1.1\r\n\(host)Content-Length: 3\r\n\r\nabc" + quick)
        let declared = try getWithBody.answer()
        #expect(declared.text == "quick" && declared.headers["connection"] == "close")
        #expect(getWithBody.rest().isEmpty)
        // Everyone else is served throughout, on kept-alive connections.
        let other = try LoopbackHTTPClient(port: port, timeoutSeconds: 3)
        for _ in 0..<2 {
            try other.request("GET", "/api/quick", port: port)
            #expect(try other.answer().text == "quick")
        }
        try other.request("POST", "/api/slow", port: port, headers: ["Authorization: Bearer s3cret"], body: Data("abc".utf8))
        #expect(try other.answer().text == "slow body of 3 bytes")
    }

    @Test func aWorkerAnswerSlowerThanLibwebsocketsTimeoutStillArrives() throws {
        // lws arms its content timeout (here 1 s) after a request without a
        // body; the worker's answer takes longer and must still be written.
        let server = try Self.serve([Route(.get, "/api/slow", access: .viewer, .worker) { _ in
            Thread.sleep(forTimeInterval: 2.5)
            return .text("slow answer")
        }, Route(.delete, "/api/slow", access: .admin, .worker) { _ in
            Thread.sleep(forTimeInterval: 2.5)
            return .text("deleted")
        }]) { $0.requestTimeoutSeconds = 1 }
        defer { server.stop() }
        let client = try LoopbackHTTPClient(port: server.boundPort)
        try client.request("GET", "/api/slow", port: server.boundPort)
        let answer = try client.answer()
        #expect(answer.status == 200 && answer.text == "slow answer")
        // The same connection carries the next request, here one that changes something.
        try client.request("DELETE", "/api/slow", port: server.boundPort, headers: ["Authorization: Bearer s3cret"])
        let deleted = try client.answer()
        #expect(deleted.status == 200 && deleted.text == "deleted")
    }

    @Test func anAnswerForAConnectionThatClosedIsDroppedNotSentToAnother() throws {
        let gate = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let server = try Self.serve([
            Route(.get, "/api/held", access: .viewer, .worker) { _ in
                started.signal()
                gate.wait()
                return .text("for the connection that left")
            },
            Route(.get, "/api/mine", access: .viewer, .worker) { _ in .text("mine") },
        ])
        defer { server.stop() }
        defer { gate.signal() } // never leave the worker held, whatever failed
        let leaving = try LoopbackHTTPClient(port: server.boundPort)
        try leaving.request("GET", "/api/held", port: server.boundPort)
        #expect(started.wait(timeout: .now() + 10) == .success)
        leaving.shutdownNow()
        // Let the service thread see the close, so the next connection may
        // be given the same lws handle (memory) the one that left had.
        Thread.sleep(forTimeInterval: 0.3)
        let staying = try LoopbackHTTPClient(port: server.boundPort)
        try staying.request("GET", "/api/mine", port: server.boundPort, headers: ["Connection: close"])
        gate.signal()
        let answer = try staying.answer()
        #expect(answer.status == 200 && answer.text == "mine")
        #expect(staying.rest().isEmpty)
    }

    @Test func aFullWorkerQueueAnswers503WithRetryAfterAtOnce() throws {
        let gate = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let worker = RequestWorker(capacity: 2)
        let server = try Self.serve([Route(.post, "/api/job", access: .admin, .worker) { request in
            if request.query["hold"] != nil {
                started.signal()
                gate.wait()
            }
            return .text("done \(request.query["n"] ?? "")")
        }], worker: worker)
        defer { server.stop() }
        defer { gate.signal() } // never leave the worker held, whatever failed
        let auth = ["Authorization: Bearer s3cret"]
        let running = try LoopbackHTTPClient(port: server.boundPort)
        try running.request("POST", "/api/job?hold=1&n=0", port: server.boundPort, headers: auth, body: Data("x".utf8))
        #expect(started.wait(timeout: .now() + 10) == .success)
        var queued: [LoopbackHTTPClient] = []
        for n in 1...2 {
            let client = try LoopbackHTTPClient(port: server.boundPort)
            try client.request("POST", "/api/job?n=\(n)", port: server.boundPort, headers: auth, body: Data("x".utf8))
            queued.append(client)
        }
        // The running job is not in the queue; these two fill it.
        #expect(waitUntil { worker.queued == 2 })
        let refused = try LoopbackHTTPClient(port: server.boundPort)
        try refused.request("POST", "/api/job?n=3", port: server.boundPort, headers: auth, body: Data("x".utf8))
        let busy = try refused.answer()
        #expect(busy.status == 503)
        #expect(busy.headers["retry-after"] == "1")
        #expect(busy.headers["content-type"] == "application/json")
        gate.signal()
        #expect(try running.answer().text == "done 0")
        for (index, client) in queued.enumerated() { #expect(try client.answer().text == "done \(index + 1)") }
    }

    @Test func aRevokedTokenEndsItsStreamsAndTheStoreIsAskedOffTheServiceThread() throws {
        let dataDir = FileManager.default.temporaryDirectory.appendingPathComponent("sightline-revoke-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dataDir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dataDir) }
        let store = try TokenStore.open(dataDir: dataDir).store
        let lobby = try store.add(name: "lobby", role: .viewer)
        let hall = try store.add(name: "hall", role: .viewer)
        let auth = AuthGuard(tokens: store, policy: AccessPolicy(viewOpen: false, loopbackBound: true))
        let router = Router(routes: [Route(.get, "/stream.mjpg", access: .viewer) { _ in
            HTTPResponse(contentType: MJPEG.contentType, body: .stream(JPEGSize.stream))
        }], authorize: { auth.refusal(for: $0, needs: $1) })
        // Which threads the revocation check asks the store (stat, read tokens.json) on.
        let askedOn = ThreadNames()
        var options = StreamServer.Options()
        options.port = 0
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        let frames = LatestFrameSlot()
        let streams = CameraStreams(cameras: [CameraFeed(name: "camera", frames: frames, stats: PipelineStats())], logger: logger)
        let server = StreamServer(options: options, streams: streams,
                                  logger: logger, router: router, worker: RequestWorker(), access: auth, readTokens: {
            askedOn.recordCurrent()
            return store.validCredentials()
        })
        try server.start()
        defer { server.stop() }
        let port = server.boundPort

        func webSocket(_ token: String) throws -> LoopbackHTTPClient {
            let client = try LoopbackHTTPClient(port: port)
            try client.request("GET", "/ws", port: port, headers: [
                "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
                "Sec-WebSocket-Version: 13", "Authorization: Bearer \(token)",
            ])
            #expect(try client.answer(toHead: true).status == 101)
            return client
        }
        func mjpeg(_ token: String) throws -> LoopbackHTTPClient {
            let client = try LoopbackHTTPClient(port: port)
            try client.request("GET", "/stream.mjpg", port: port, headers: ["Authorization: Bearer \(token)"])
            let head = try client.answer(toHead: true)
            #expect(head.status == 200 && head.headers["content-type"] == MJPEG.contentType)
            return client
        }
        let revokedSocket = try webSocket(lobby)
        let revokedStream = try mjpeg(lobby)
        let keptStream = try mjpeg(hall)

        // As `sightline token revoke` does it: another process's store, the same file.
        #expect(try TokenStore.open(dataDir: dataDir).store.revoke(name: "lobby"))

        // No frame is published meanwhile: the watch's finding alone wakes the service thread.
        let closing = try #require(revokedSocket.untilClosed(), "the revoked /ws viewer is still open")
        // A WebSocket close frame (unmasked, server to client): 1008, policy violation, and why.
        #expect(closing.count > 4 && closing[0] == 0x88 && closing[2] == 0x03 && closing[3] == 0xF0)
        #expect(String(decoding: closing.dropFirst(4), as: UTF8.self).contains("revoked"))
        #expect(revokedStream.untilClosed() != nil, "the revoked MJPEG viewer is still open")
        // The other token's stream goes on: it gets the next frame.
        frames.publish(EncodedFrame(seq: 1, capturedAt: 0, capturedNanos: MonotonicClock.nanos(), width: 1, height: 1,
                                    json: Data("{}".utf8), jpeg: Data([0xFF, 0xD8, 0xFF, 0xD9])))
        server.wake()
        #expect(keptStream.waitFor("--\(MJPEG.boundary)"))
        // The store was asked for revocations, and only on the watch's own thread, never the service thread.
        let threads = askedOn.names
        #expect(!threads.isEmpty && threads.allSatisfy { $0.hasSuffix("revocations") }, "\(threads)")
    }
}

/// The names of the threads something ran on.
private final class ThreadNames: Sendable {
    private let seen = Locked<Set<String>>([])
    func recordCurrent() { _ = seen.withLock { $0.insert(Thread.current.name ?? "unnamed") } }
    var names: Set<String> { seen.withLock { $0 } }
}
