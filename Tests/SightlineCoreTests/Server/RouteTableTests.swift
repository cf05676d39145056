import Foundation
import Testing
@testable import SightlineSupport
@testable import SightlineVision
@testable import SightlinePipeline
@testable import SightlineHTTP
@testable import SightlineCore
import SightlineTesting
import SightlineHTTPTesting

/// The server's whole route table, as `Routes.router` builds it: every
/// endpoint with who may call it and where it runs, written out here once,
/// so a route that changes its access or moves onto the service thread
/// shows up in review as a change to this list.
@Suite struct RouteTableTests {
    static func router(viewOpen: Bool = true) throws -> Router {
        Routes.router(try parts(auth: AuthGuard.testing(viewOpen: viewOpen)))
    }

    /// A camera's parts whose state names `source` and whose snapshot is `frame`.
    static func parts(auth: AuthGuard, source: String = "demo", frame: EncodedFrame? = nil) throws -> Routes.Parts {
        let library = TemplateLibrary()
        return Routes.Parts(
            state: {
                ServerState(version: "test", uptimeSeconds: 1, status: SourceStatus(spec: source, name: source, state: .live),
                            stats: PipelineStats().snapshot(), templates: library.all)
            },
            metrics: { "# metrics \(source)\n" },
            latestFrame: { frame },
            staticFiles: StaticFiles(root: TestPaths.repository + "/web"),
            templates: TemplateAPI(library: library, store: nil, uploadedNames: [], defaultThreshold: 0.7,
                                   frameSize: { (640, 480) }),
            sources: SourcesAPI(configured: [], current: { "demo" }, switchTo: { _ in }),
            faces: FaceAPI(service: FaceService(recognizer: try FaceRecognizer(store: nil))),
            auth: auth,
            live: { true })
    }

    @Test func twoCamerasEachAnswerUnderTheirPrefixAndTheFirstUnprefixed() throws {
        let auth = AuthGuard.testing(viewOpen: true)
        func frame(_ seq: UInt64) -> EncodedFrame {
            EncodedFrame(seq: seq, capturedAt: 0, capturedNanos: 0, width: 2, height: 2, json: Data(), jpeg: Data([UInt8(seq)]))
        }
        let router = Routes.router(cameras: [
            (name: "front", parts: try Self.parts(auth: auth, source: "demo", frame: frame(1))),
            (name: "yard", parts: try Self.parts(auth: auth, source: "file:/v.mp4", frame: frame(2))),
        ])
        func source(_ path: String) throws -> String? {
            let answer = router.respond(to: HTTPRequest(method: .get, path: path))
            guard answer.status == 200, case .data(let body) = answer.body else { return nil }
            return try JSONDecoder().decode(ServerState.self, from: body).source.name
        }
        #expect(try source("/api/state") == "demo")
        #expect(try source("/api/cameras/front/state") == "demo")
        #expect(try source("/api/cameras/yard/state") == "file:/v.mp4")
        #expect(try source("/api/cameras/garage/state") == nil, "no such camera: 404")
        func snapshot(_ path: String) -> Data? {
            let answer = router.respond(to: HTTPRequest(method: .get, path: path))
            guard answer.status == 200, case .data(let body) = answer.body else { return nil }
            return body
        }
        #expect(snapshot("/snapshot.jpg") == Data([1]))
        #expect(snapshot("/cam/front/snapshot.jpg") == Data([1]))
        #expect(snapshot("/cam/yard/snapshot.jpg") == Data([2]))
        let metrics = router.respond(to: HTTPRequest(method: .get, path: "/cam/yard/metrics"))
        if case .data(let body) = metrics.body { #expect(String(decoding: body, as: UTF8.self).contains("file:/v.mp4")) }
        #expect(metrics.status == 200)
    }

    @Test func aCameraIsReachedByItsNameInAnyCase() throws {
        let auth = AuthGuard.testing(viewOpen: true)
        func frame(_ seq: UInt64) -> EncodedFrame {
            EncodedFrame(seq: seq, capturedAt: 0, capturedNanos: 0, width: 2, height: 2, json: Data(), jpeg: Data([UInt8(seq)]))
        }
        let router = Routes.router(cameras: [
            (name: "front", parts: try Self.parts(auth: auth, source: "demo", frame: frame(1))),
            (name: "vm", parts: try Self.parts(auth: auth, source: "file:/v.mp4", frame: frame(2))),
        ])
        func answer(_ path: String) -> (Int, Data?) {
            let answer = router.respond(to: HTTPRequest(method: .get, path: path))
            guard case .data(let body) = answer.body else { return (answer.status, nil) }
            return (answer.status, body)
        }
        #expect(answer("/cam/VM/snapshot.jpg").1 == Data([2]))
        #expect(answer("/cam/Front/snapshot.jpg").1 == Data([1]))
        let state = try JSONDecoder().decode(ServerState.self, from: try #require(answer("/api/cameras/Vm/state").1))
        #expect(state.source.name == "file:/v.mp4")
        let missing = answer("/api/cameras/garage/state")
        #expect(missing.0 == 404 && String(decoding: missing.1 ?? Data(), as: UTF8.self).contains("no such camera"))
        #expect(answer("/cam/garage/snapshot.jpg").0 == 404)
    }

    /// Method, pattern, access, execution: the table as it should be
    /// (`inline-or-worker`: on the worker unless memory has the answer: a
    /// snapshot whose JPEG nobody made yet is encoded on the worker).
    static let expected: Set<String> = [
        "GET / anyone inline-or-worker",
        "GET /api/state viewer inline",
        "GET /metrics viewer inline",
        "GET /snapshot.jpg viewer inline-or-worker",
        "GET /stream.mjpg viewer inline",
        "GET /healthz anyone inline",
        "POST /api/session anyone inline",
        "GET /api/session anyone inline",
        "DELETE /api/session anyone inline",
        "GET /api/templates viewer inline",
        "POST /api/templates admin worker",
        "GET /api/templates/{name}.png viewer worker",
        "PATCH /api/templates/{name} admin worker",
        "PUT /api/templates/{name} admin worker",
        "DELETE /api/templates/{name} admin worker",
        "GET /api/sources viewer worker",
        "POST /api/source admin worker",
        "GET /api/people viewer worker",
        "DELETE /api/people/{name} admin worker",
        "POST /api/faces/{id}/name admin worker",
        "POST /api/faces/{id}/feedback admin worker",
    ]

    /// The table with one camera named "camera": the routes above, and each
    /// camera route again under that camera's prefix, with the same access
    /// (the page and signing in are the server's, not a camera's); and once
    /// more with the name as a parameter (`{camera}`: any case of a camera's
    /// name; the stream server finds an MJPEG stream's camera ignoring case too).
    static var expectedWithPrefixes: Set<String> {
        var table = expected
        for entry in expected where !entry.contains(" / ") && !entry.contains("/api/session") {
            let parts = entry.split(separator: " ").map(String.init)
            for name in ["camera", "{camera}"] {
                let path = parts[1].hasPrefix("/api/") ? "/api/cameras/\(name)/" + parts[1].dropFirst(5) : "/cam/\(name)" + parts[1]
                table.insert([parts[0], path, parts[2], parts[3]].joined(separator: " "))
            }
        }
        return table
    }

    @Test func theTableSaysWhoMayCallEachEndpointAndWhereItRuns() throws {
        let routes = try Self.router().routes
        let table = routes.map {
            "\($0.method.rawValue) \($0.pattern.text) \($0.access) \($0.inlineAnswer == nil ? "" : "inline-or-")\($0.execution)"
        }
        #expect(Set(table) == Self.expectedWithPrefixes)
        #expect(table.contains("GET /api/cameras/camera/state viewer inline"))
        #expect(table.contains("GET /cam/camera/stream.mjpg viewer inline"))
        #expect(table.count == Set(table).count, "a method and pattern appear twice")
        // Every change but signing in and out needs an admin, and only reads are open to viewers.
        for route in routes where route.method != .get && !route.pattern.text.hasPrefix("/api/session") {
            #expect(route.access == .admin, "\(route.method.rawValue) \(route.pattern.text)")
        }
    }

    @Test func requestsThroughTheWholeTable() throws {
        let router = try Self.router()
        let admin = ["authorization": "Bearer s3cret"]
        func decide(_ method: HTTPRequest.Method, _ path: String, headers: [String: String] = [:],
                    query: [String: String] = [:]) -> Router.Decision {
            router.decide(HTTPRequest(method: method, path: path, query: query, headers: headers))
        }
        func status(_ decision: Router.Decision) -> Int? {
            if case .respond(let response) = decision { return response.status }
            return nil
        }
        func queued(_ decision: Router.Decision) -> Bool {
            if case .work = decision { return true }
            return false
        }
        // Inline answers, from memory.
        #expect(status(decide(.get, "/api/state")) == 200)
        #expect(status(decide(.get, "/api/templates")) == 200)
        #expect(status(decide(.get, "/healthz")) == 503) // live, but no frame yet
        #expect(status(decide(.get, "/snapshot.jpg")) == 503)
        #expect(status(decide(.get, "/", query: ["action": "nonsense"])) == 400)
        #expect(status(decide(.get, "/")) == 200) // the page
        // Slow work is queued, after the credential check.
        #expect(queued(decide(.get, "/api/sources")))
        #expect(queued(decide(.get, "/api/templates/demo.png")))
        #expect(queued(decide(.post, "/api/faces/3/name", headers: admin)))
        #expect(status(decide(.post, "/api/faces/3/name")) == 401)
        #expect(status(decide(.delete, "/api/templates/demo")) == 401)
        // Unknown API paths, wrong methods and static files.
        let unknown = router.respond(to: HTTPRequest(method: .get, path: "/api/nothing/here"))
        #expect(unknown.status == 404 && unknown.contentType == "application/json")
        let wrongMethod = router.respond(to: HTTPRequest(method: .delete, path: "/api/sources", headers: admin))
        #expect(wrongMethod.status == 405 && wrongMethod.headers.contains { $0.0 == "allow:" && $0.1 == "GET, HEAD" })
        let templateMethods = router.respond(to: HTTPRequest(method: .post, path: "/api/templates/logo", headers: admin))
        #expect(templateMethods.headers.contains { $0.0 == "allow:" && $0.1 == "DELETE, PATCH, PUT" })
        #expect(router.respond(to: HTTPRequest(method: .get, path: "/app.js")).status == 200)
        #expect(router.respond(to: HTTPRequest(method: .get, path: "/no-such-file.js")).status == 404)
    }

    /// A snapshot nobody made the JPEG of is encoded on the worker, at the
    /// stream's size (`?full=1`: the full picture), once: then it is answered
    /// inline; one made already (someone watches) is answered inline at once.
    @Test func aSnapshotIsEncodedOnTheWorkerOnlyWhenNobodyMadeIt() throws {
        let image = ImageBuffer(width: 1920, height: 1080)
        let encodes = Locked(0)
        let jpeg = FrameJPEG(image: image, rule: JPEGSizeRule(maxWidth: 1280), encoded: { _ in encodes.withLock { $0 += 1 } })
        let frame = EncodedFrame(seq: 3, capturedAt: 0, capturedNanos: 0, width: 1920, height: 1080, jpeg: jpeg, sendable: [:])
        let router = Routes.router(try Self.parts(auth: AuthGuard.testing(viewOpen: true), frame: frame))
        /// Whether it was answered inline, and the JPEG's size.
        func decoded(_ query: [String: String], path: String = "/snapshot.jpg") throws -> (Bool, Int, Int) {
            let inline: Bool, answer: HTTPResponse
            switch router.decide(HTTPRequest(method: .get, path: path, query: query)) {
            case .respond(let response): (inline, answer) = (true, response)
            case .work(let request, let handler): (inline, answer) = (false, handler(request))
            }
            let size = try JPEGDecoder().size(of: try #require(answer.bodyData))
            return (inline, size.width, size.height)
        }
        #expect(try decoded([:]) == (false, 1280, 720))
        #expect(try decoded([:]) == (true, 1280, 720))
        #expect(try decoded(["action": "snapshot"], path: "/") == (true, 1280, 720))
        #expect(try decoded(["full": "1"]) == (false, 1920, 1080))
        #expect(try decoded(["full": "1"]) == (true, 1920, 1080))
        #expect(encodes.withLock { $0 } == 2)
    }

    @Test func closedViewingClosesEverythingButThePageSigningInAndHealth() throws {
        let router = try Self.router(viewOpen: false)
        for path in ["/api/state", "/metrics", "/snapshot.jpg", "/api/templates", "/api/sources"] {
            let answer = router.respond(to: HTTPRequest(method: .get, path: path))
            #expect(answer.status == 401, "\(path)")
            #expect(answer.headers.contains { $0.0 == "www-authenticate:" }, "\(path): players get the Basic challenge")
            // The page's own script requests get no challenge (the browser would show its own prompt).
            for mode in ["cors", "same-origin", "websocket", "no-cors"] {
                let fromPage = router.respond(to: HTTPRequest(method: .get, path: path, headers: ["sec-fetch-mode": mode]))
                #expect(fromPage.status == 401 && !fromPage.headers.contains { $0.0 == "www-authenticate:" }, "\(path) \(mode)")
            }
            let typed = router.respond(to: HTTPRequest(method: .get, path: path, headers: ["sec-fetch-mode": "navigate"]))
            #expect(typed.headers.contains { $0.0 == "www-authenticate:" }, "\(path): a typed URL gets the prompt")
        }
        #expect(router.respond(to: HTTPRequest(method: .get, path: "/", query: ["action": "snapshot"])).status == 401)
        #expect(router.respond(to: HTTPRequest(method: .get, path: "/", query: ["action": "stream"])).status == 401)
        // The page itself and its files: open, so a browser can sign in.
        for path in ["/", "/app.js"] {
            #expect(router.respond(to: HTTPRequest(method: .get, path: path)).status == 200, "\(path)")
        }
        #expect(router.respond(to: HTTPRequest(method: .get, path: "/healthz")).status == 503)
        #expect(router.respond(to: HTTPRequest(method: .get, path: "/api/session")).status == 200)
        let viewer = ["authorization": "Bearer s3cret"]
        #expect(router.respond(to: HTTPRequest(method: .get, path: "/api/state", headers: viewer)).status == 200)
    }
}
