import Foundation
import Testing
@testable import SightlineHTTP
@testable import SightlineEvents
@testable import SightlineCore
import SightlineTesting
import SightlineEventsTesting
import SightlineHTTPTesting

@Suite struct EventAPITests {
    typealias S = StoredEvents

    static func api() throws -> (Router, EventStore) {
        let store = EventStore(dataDirectory: try TestPaths.temporaryDirectory())
        try store.load()
        for n in 1...5 {
            try store.save(S.record(n, kind: n == 5 ? .face : .template, name: n == 5 ? "Ada" : nil),
                           snapshot: Data("snapshot \(n)".utf8), crop: n == 1 ? nil : Data("crop \(n)".utf8))
        }
        let status = EventStatus(camera: "test", store: store.totals, recorder: EventRecorder.Counts(),
                                 tracker: EventSink.TrackerCounts(tracked: 0, open: 0, filtered: 0, untracked: 0), mqtt: nil)
        let api = EventAPI(store: store, status: { status })
        let auth = AuthGuard.testing()
        return (Router(routes: api.routes, authorize: { auth.refusal(for: $0, needs: $1) }), store)
    }

    static func get(_ router: Router, _ path: String, query: [String: String] = [:], method: HTTPRequest.Method = .get,
                    token: String? = nil) -> (Int, [String: Any], Data) {
        var headers: [String: String] = [:]
        if let token { headers["authorization"] = "Bearer \(token)" }
        let response = router.respond(to: HTTPRequest(method: method, path: path, query: query, headers: headers))
        let body = response.bodyData ?? Data()
        let json = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:]
        return (response.status, json, body)
    }

    @Test func listsPagesAndFilters() throws {
        let (router, _) = try Self.api()
        let (status, page, _) = Self.get(router, "/api/events", query: ["limit": "2"])
        #expect(status == 200)
        let events = try #require(page["events"] as? [[String: Any]])
        #expect(events.map { $0["id"] as? String } == [S.record(5).id, S.record(4).id])
        #expect(page["next"] as? String == S.record(4).id)
        let next = Self.get(router, "/api/events", query: ["limit": "2", "before": S.record(4).id]).1
        #expect((next["events"] as? [[String: Any]])?.count == 2)
        let ada = Self.get(router, "/api/events", query: ["name": "Ada"]).1["events"] as? [[String: Any]]
        #expect(ada?.count == 1 && ada?.first?["name"] as? String == "Ada" && ada?.first?["trackId"] as? Int == 5)
        let faces = Self.get(router, "/api/events", query: ["kind": "face"]).1["events"] as? [[String: Any]]
        #expect(faces?.count == 1)
        let stats = Self.get(router, "/api/events/stats")
        #expect(stats.0 == 200 && (stats.1["store"] as? [String: Any])?["events"] as? Int == 5)
    }

    @Test func badInputGetsAClearFourHundred() throws {
        let (router, _) = try Self.api()
        for (path, query) in [("/api/events", ["kind": "dog"]), ("/api/events", ["limit": "-3"]),
                              ("/api/events", ["colour": "red"]), ("/api/events/..%2Fetc", [:]),
                              ("/api/events/nope/crop.jpg", [:])] {
            let (status, body, _) = Self.get(router, path, query: query)
            #expect(status == 400, "\(path) \(query)")
            #expect(body["error"] is String && body["detail"] is String)
        }
        let missing = Self.get(router, "/api/events/\(S.record(77).id)")
        #expect(missing.0 == 404 && missing.1["error"] as? String == "no such event")
        #expect(Self.get(router, "/api/events/\(S.record(1).id)/crop.jpg").0 == 404, "event 1 has no crop")
    }

    @Test func imagesAndOneEvent() throws {
        let (router, _) = try Self.api()
        let one = Self.get(router, "/api/events/\(S.record(2).id)")
        #expect(one.0 == 200 && (one.1["event"] as? [String: Any])?["label"] as? String == "logo")
        let snapshot = router.respond(to: HTTPRequest(method: .get, path: "/api/events/\(S.record(2).id)/snapshot.jpg"))
        #expect(snapshot.status == 200 && snapshot.contentType == "image/jpeg" && snapshot.bodyData == Data("snapshot 2".utf8))
        let crop = router.respond(to: HTTPRequest(method: .get, path: "/api/events/\(S.record(2).id)/crop.jpg"))
        #expect(crop.bodyData == Data("crop 2".utf8))
    }

    @Test func deletingNeedsAnAdminAndRunsOnTheWorker() throws {
        let (router, store) = try Self.api()
        let id = S.record(3).id
        #expect(Self.get(router, "/api/events/\(id)", method: .delete).0 == 401)
        guard case .work = router.decide(HTTPRequest(method: .delete, path: "/api/events/\(id)",
                                                     headers: ["authorization": "Bearer s3cret"])) else {
            Issue.record("DELETE should run on the request worker")
            return
        }
        let (status, body, _) = Self.get(router, "/api/events/\(id)", method: .delete, token: "s3cret")
        #expect(status == 200 && body["deleted"] as? String == id)
        #expect(store.record(id) == nil)
        #expect(Self.get(router, "/api/events/\(id)", method: .delete, token: "s3cret").0 == 404)
        #expect(Self.get(router, "/api/events/\(id)/snapshot.jpg").0 == 404)
    }
}
