import Foundation
import Synchronization
import Testing
@testable import SightlineSupport
@testable import SightlineHTTP
import SightlineTesting
import SightlineHTTPTesting

@Suite struct RouterTests {
    static let tokenValue = "s3cret"

    static func router(_ routes: [Route]) -> Router {
        let auth = AuthGuard.testing()
        return Router(routes: routes, authorize: { auth.refusal(for: $0, needs: $1) },
                      fallback: { .text("static \($0.path)") })
    }

    static func echo(_ request: HTTPRequest) -> HTTPResponse {
        .json(["path": request.path, "params": request.parameters.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: ",")])
    }

    static func body(_ response: HTTPResponse) -> String { String(decoding: response.bodyData ?? Data(), as: UTF8.self) }

    @Test func patternsCaptureDecodedParameters() {
        #expect(PathPattern("/api/faces/{id}/name").match("/api/faces/12/name") == ["id": "12"])
        #expect(PathPattern("/api/templates/{name}.png").match("/api/templates/my%20logo.png") == ["name": "my logo"])
        #expect(PathPattern("/api/templates/{name}").match("/api/templates/a%0Ab") == ["name": "a\nb"])
        #expect(PathPattern("/api/templates/{name}.png").match("/api/templates/.png") == nil)
        #expect(PathPattern("/api/templates/{name}").match("/api/templates") == nil)
        #expect(PathPattern("/api/templates/{name}").match("/api/templates/a/b") == nil)
        #expect(PathPattern("/api/state").match("/api/state/") == [:])
        #expect(PathPattern("/").match("/") == [:])
        #expect(PathPattern("/").match("/index.html") == nil)
        #expect(PathPattern("/api/people/{name}").match("/api/people/%ZZ") == nil)
    }

    @Test func unknownPathsMethodsAndStaticFiles() {
        let router = Self.router([Route(.get, "/api/things/{id}", access: .viewer, handler: Self.echo),
                                  Route(.delete, "/api/things/{id}", access: .admin, .worker, handler: Self.echo)])
        #expect(router.respond(to: HTTPRequest(method: .get, path: "/api/nothing")).status == 404)
        let wrong = router.respond(to: HTTPRequest(method: .post, path: "/api/things/3"))
        #expect(wrong.status == 405)
        #expect(wrong.headers.contains { $0.0 == "allow:" && $0.1 == "DELETE, GET, HEAD" })
        #expect(Self.body(router.respond(to: HTTPRequest(method: .get, path: "/app.js"))) == "static /app.js")
        #expect(router.respond(to: HTTPRequest(method: .post, path: "/app.js")).status == 405)
        let head = router.respond(to: HTTPRequest(method: .head, path: "/api/things/3"))
        #expect(head.status == 200 && Self.body(head).contains("id=3"))
    }

    @Test func accessIsCheckedPerRouteBeforeTheHandler() {
        let router = Self.router([Route(.get, "/api/open", access: .viewer) { _ in .text("open") },
                                  Route(.post, "/api/change", access: .admin) { _ in .text("changed") }])
        #expect(router.respond(to: HTTPRequest(method: .get, path: "/api/open")).status == 200)
        #expect(router.respond(to: HTTPRequest(method: .post, path: "/api/change")).status == 401)
        let wrong = HTTPRequest(method: .post, path: "/api/change", headers: ["authorization": "Bearer nope"], peer: "10.0.0.9")
        #expect(router.respond(to: wrong).status == 401)
        let right = HTTPRequest(method: .post, path: "/api/change", headers: ["authorization": "Bearer s3cret"])
        #expect(Self.body(router.respond(to: right)) == "changed")
    }

    @Test func slowRoutesAreHandedToTheWorkerAfterTheCheck() {
        let router = Self.router([Route(.post, "/api/slow/{x}", access: .admin, .worker, handler: Self.echo),
                                  Route(.get, "/api/quick", access: .viewer) { _ in .text("quick") }])
        let request = HTTPRequest(method: .post, path: "/api/slow/7", headers: ["authorization": "Bearer s3cret"])
        guard case .work(let matched, let handler) = router.decide(request) else {
            Issue.record("a worker route was answered on the service thread")
            return
        }
        #expect(matched.parameters == ["x": "7"])
        #expect(Self.body(handler(matched)).contains("x=7"))
        // A refused caller never reaches the worker.
        guard case .respond(let refusal) = router.decide(HTTPRequest(method: .post, path: "/api/slow/7")) else {
            Issue.record("an unauthorized request was queued for the worker")
            return
        }
        #expect(refusal.status == 401)
        guard case .respond(let quick) = router.decide(HTTPRequest(method: .get, path: "/api/quick")) else {
            Issue.record("an inline route went to the worker")
            return
        }
        #expect(Self.body(quick) == "quick")
    }

    @Test func workerRunsJobsInOrderAndRefusesWhenFull() throws {
        let worker = RequestWorker(capacity: 2)
        let gate = DispatchSemaphore(value: 0)
        let answers = Answers()
        // Not started: jobs wait in the queue, so its bound is exact.
        #expect(worker.submit(.init(run: { .text("1") }, deliver: answers.add)))
        #expect(worker.submit(.init(run: { gate.wait(); return .text("2") }, deliver: answers.add)))
        #expect(!worker.submit(.init(run: { .text("3") }, deliver: answers.add)))
        #expect(RequestWorker.busy.status == 503 && RequestWorker.busy.headers.contains { $0.0 == "retry-after:" })
        worker.start()
        #expect(waitUntil { answers.all == ["1"] })
        gate.signal()
        #expect(waitUntil { answers.all == ["1", "2"] })
        worker.stop()
        #expect(!worker.submit(.init(run: { .text("4") }, deliver: answers.add)))
    }
}

/// Bodies of delivered answers, in order.
final class Answers: Sendable {
    private let list = Locked<[String]>([])
    var add: @Sendable (HTTPResponse) -> Void {
        { [self] response in self.list.withLock { $0.append(String(decoding: response.bodyData ?? Data(), as: UTF8.self)) } }
    }
    var all: [String] { list.withLock { $0 } }
}
