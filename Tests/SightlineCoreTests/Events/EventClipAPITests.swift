import Foundation
import Testing
@testable import SightlineHTTP
@testable import SightlineEvents
@testable import SightlineCore
import SightlineTesting
import SightlineEventsTesting
import SightlineHTTPTesting

/// `GET`/`HEAD /api/events/{id}/clip.mp4` through the router (the file read as the worker reads it).
@Suite struct EventClipAPITests {
    typealias S = StoredEvents

    func api() throws -> (Router, EventStore, Data) {
        let store = EventStore(dataDirectory: try TestPaths.temporaryDirectory())
        try store.load()
        let clip = Data((0..<2000).map { UInt8($0 % 251) })
        try store.save(S.record(1))
        try clip.write(to: URL(fileURLWithPath: store.clipPath(S.record(1).id)))
        try store.updateClip(S.record(1).id, ClipInfo(start: 1, duration: 1, bytes: clip.count, frames: 30, complete: true),
                             persist: true)
        try store.save(S.record(2))
        let status = EventStatus(camera: "test", store: store.totals, recorder: EventRecorder.Counts(),
                                 tracker: EventSink.TrackerCounts(tracked: 0, open: 0, filtered: 0, untracked: 0), mqtt: nil)
        let auth = AuthGuard.testing()
        let router = Router(routes: EventAPI(store: store, status: { status }).routes,
                            authorize: { auth.refusal(for: $0, needs: $1) })
        return (router, store, clip)
    }

    func request(_ router: Router, _ id: String, range: String? = nil, method: HTTPRequest.Method = .get) -> HTTPResponse {
        router.respond(to: HTTPRequest(method: method, path: "/api/events/\(id)/clip.mp4",
                                       headers: range.map { ["range": $0] } ?? [:]))
    }

    func header(_ response: HTTPResponse, _ name: String) -> String? {
        response.headers.first { $0.0 == name + ":" }?.1
    }

    @Test func wholeRangesHeadAndUnsatisfiable() throws {
        let (router, _, clip) = try api()
        let id = S.record(1).id
        let whole = request(router, id)
        #expect(whole.status == 200 && whole.bodyData == clip && whole.contentType == "video/mp4")
        #expect(header(whole, "accept-ranges") == "bytes")
        let first = request(router, id, range: "bytes=0-99")
        #expect(first.status == 206 && first.bodyData == clip.prefix(100))
        #expect(header(first, "content-range") == "bytes 0-99/2000")
        let last = request(router, id, range: "bytes=-500")
        #expect(last.status == 206 && last.bodyData == clip.suffix(500))
        let past = request(router, id, range: "bytes=999999999-")
        #expect(past.status == 416 && header(past, "content-range") == "bytes */2000")
        let head = request(router, id, method: .head)
        #expect(head.status == 200 && head.bodyData?.isEmpty == true && head.headLength == 2000)
    }

    @Test func eventsWithoutAClipSayHasClipFalseAnd404() throws {
        let (router, _, _) = try api()
        #expect(request(router, S.record(2).id).status == 404)
        #expect(request(router, S.record(9).id).status == 404)
        #expect(request(router, "not-an-id").status == 400)
        let page = router.respond(to: HTTPRequest(method: .get, path: "/api/events"))
        let events = try #require((try JSONSerialization.jsonObject(with: page.bodyData!) as? [String: Any])?["events"]
            as? [[String: Any]])
        let byID = Dictionary(uniqueKeysWithValues: events.map { ($0["id"] as! String, $0) })
        #expect(byID[S.record(1).id]?["has_clip"] as? Bool == true)
        #expect((byID[S.record(1).id]?["clip"] as? [String: Any])?["frames"] as? Int == 30)
        #expect(byID[S.record(2).id]?["has_clip"] as? Bool == false && byID[S.record(2).id]?["clip"] == nil)
        let one = router.respond(to: HTTPRequest(method: .get, path: "/api/events/\(S.record(1).id)"))
        let event = (try JSONSerialization.jsonObject(with: one.bodyData!) as? [String: Any])?["event"] as? [String: Any]
        #expect(event?["has_clip"] as? Bool == true && event?["id"] as? String == S.record(1).id)
    }
}
