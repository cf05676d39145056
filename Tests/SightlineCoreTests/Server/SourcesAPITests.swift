import Foundation
import Synchronization
import Testing
@testable import SightlineSupport
@testable import SightlineHTTP
@testable import SightlineCore
import SightlineHTTPTesting

@Suite struct SourcesAPITests {
    @Test func listsOffersAndSwitchesOnlyToThem() throws {
        let switched = Locked<[String]>([])
        let api = SourcesAPI(configured: ["file:/videos/door.mp4"], current: { "demo" },
                             switchTo: { spec in switched.withLock { $0.append(spec) } })
        let auth = AuthGuard.testing()
        let router = Router(routes: api.routes, authorize: { auth.refusal(for: $0, needs: $1) })
        let listing = router.respond(to: HTTPRequest(method: .get, path: "/api/sources"))
        let body = try #require(try JSONSerialization.jsonObject(with: listing.bodyData ?? Data()) as? [String: Any])
        let specs = (body["sources"] as? [[String: Any]])?.compactMap { $0["spec"] as? String } ?? []
        #expect(body["current"] as? String == "demo" && specs.contains("demo") && specs.contains("file:/videos/door.mp4"))

        func post(_ body: String, token: Bool = true) -> HTTPResponse {
            router.respond(to: HTTPRequest(method: .post, path: "/api/source",
                                           headers: token ? ["authorization": "Bearer s3cret"] : [:], body: Data(body.utf8)))
        }
        #expect(post(#"{"spec": "file:/videos/door.mp4"}"#, token: false).status == 401)
        #expect(post(#"{"spec": "file:/etc/passwd"}"#).status == 400)
        #expect(post("nonsense").status == 400)
        #expect(switched.withLock { $0 }.isEmpty)
        #expect(post(#"{"spec": "file:/videos/door.mp4"}"#).status == 200)
        #expect(switched.withLock { $0 } == ["file:/videos/door.mp4"])
    }
}
