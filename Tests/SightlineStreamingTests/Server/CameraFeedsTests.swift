import Foundation
import Testing
@testable import SightlinePipeline
@testable import SightlineHTTP
@testable import SightlineStreaming

/// The stream server's cameras and route table, changed at runtime.
@Suite struct CameraFeedsTests {
    private func feed(_ name: String) -> CameraFeed {
        CameraFeed(name: name, frames: LatestFrameSlot(), stats: PipelineStats())
    }

    @Test("cameras come and go by name; the first stays; a name is taken ignoring case")
    func addAndRemove() {
        let front = feed("front")
        let feeds = CameraFeeds(all: [front])
        let yard = feed("yard")
        #expect(feeds.add(yard))
        #expect(!feeds.add(feed("YARD")), "names are compared ignoring case")
        #expect(feeds.feed(forPath: "/cam/yard/ws")?.feed.frames === yard.frames)
        #expect(feeds.feed(forPath: "/cam/yard/ws")?.path == "/ws")
        #expect(feeds.remove(named: "front") == nil, "the first camera stays")
        #expect(feeds.remove(named: "nope") == nil)
        #expect(feeds.remove(named: "yard")?.frames === yard.frames)
        #expect(feeds.feed(forPath: "/cam/yard/ws") == nil)
        #expect(!feeds.contains(yard) && feeds.contains(front))
        // A camera of the same name made again is another camera.
        let again = feed("yard")
        #expect(feeds.add(again) && feeds.contains(again) && !feeds.contains(yard))
        #expect(feeds.all.map(\.name) == ["front", "yard"])
        #expect(feeds.feed(forPath: "/ws")?.feed.frames === front.frames)
    }

    @Test("a replaced route table decides the requests after it")
    func routeTable() {
        let allow: Router.Authorizer = { _, _ in nil }
        let table = RouteTable(Router(routes: [Route(.get, "/api/a", access: .anyone) { _ in .text("a") }], authorize: allow))
        let request = HTTPRequest(method: .get, path: "/api/b")
        #expect(table.current.respond(to: request).status == 404)
        table.replace(with: Router(routes: [Route(.get, "/api/b", access: .anyone) { _ in .text("b") }], authorize: allow))
        #expect(table.current.respond(to: request).status == 200)
        #expect(table.current.respond(to: HTTPRequest(method: .get, path: "/api/a")).status == 404)
    }
}
