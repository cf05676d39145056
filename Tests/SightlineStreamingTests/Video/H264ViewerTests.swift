import Foundation
import Testing
@testable import SightlinePipeline
@testable import SightlineStreaming

/// The H.264 viewer's policy on a feed filled by hand, on a clock the test moves.
@Suite("Video: H.264 viewer")
struct H264ViewerTests {
    static let second: UInt64 = 1_000_000_000

    /// Publishes a unit captured at `at` seconds.
    func publish(_ feed: VideoFeed, _ rendition: VideoRendition = .main, seq: UInt64, at: Double, key: Bool) {
        feed.publish(rendition, seq: seq, capturedNanos: UInt64(at * 1e9), json: Data("{\"seq\":\(seq)}".utf8),
                     data: Data([0, 0, 1, key ? 0x65 : 0x41]), isKeyframe: key, width: 64, height: 48)
    }

    func nanos(_ seconds: Double) -> UInt64 { UInt64(seconds * 1e9) }

    /// Steps until it waits; the seqs of the access units sent, in order (each after its JSON).
    func drain(_ viewer: H264Viewer, _ feed: VideoFeed, now: Double, events: inout [H264Viewer.Event]) -> [UInt64] {
        var sent: [UInt64] = []
        var lastJSON: UInt64?
        for _ in 0..<1000 {
            let (step, happened) = viewer.step(feed, now: nanos(now))
            events += happened
            switch step {
            case .wait: return sent
            case .json(let unit):
                #expect(lastJSON == nil, "two JSON messages in a row")
                lastJSON = unit.seq
            case .accessUnit(let unit):
                #expect(lastJSON == unit.seq, "an access unit must follow its own JSON")
                lastJSON = nil
                sent.append(unit.seq)
            case .notice:
                #expect(lastJSON == nil, "a notice between a JSON and its access unit")
            }
        }
        Issue.record("never waited")
        return sent
    }

    @Test("the query: jpeg by default, h264 with auto, main or low; anything else is refused")
    func parsesTheQuery() throws {
        func parse(_ query: [String: String], h264: Bool = true, low: Bool = true) -> StreamFormat? {
            try? StreamFormat.parse(query, h264Available: h264, lowAvailable: low).get()
        }
        #expect(parse([:]) == .jpeg)
        #expect(parse(["video": "jpeg"]) == .jpeg)
        #expect(parse(["video": "h264"]) == .h264(pinned: nil))
        #expect(parse(["video": "h264", "rendition": "auto"]) == .h264(pinned: nil))
        #expect(parse(["video": "h264", "rendition": "low"]) == .h264(pinned: .low))
        #expect(parse(["video": "h264", "rendition": "main"]) == .h264(pinned: .main))
        #expect(parse(["video": "h265"]) == nil)
        #expect(parse(["video": ""]) == nil)
        #expect(parse(["video": "h264", "rendition": "tiny"]) == nil)
        #expect(parse(["video": "h264", "rendition": "low"], low: false) == nil)
        #expect(parse(["video": "h264"], h264: false) == nil)
        #expect(parse(["video": "jpeg"], h264: false) == .jpeg)
        if case .failure(let refused) = StreamFormat.parse(["video": "vp8"], h264Available: true, lowAvailable: true) {
            #expect(refused.response.status == 400)
        } else {
            Issue.record("video=vp8 must be refused")
        }
    }

    @Test("a joiner waits for a keyframe, not an old one, then gets every frame in order")
    func joinsOnAKeyframe() {
        let feed = VideoFeed()
        publish(feed, seq: 1, at: 0.0, key: true)
        publish(feed, seq: 2, at: 0.1, key: false)
        publish(feed, seq: 3, at: 0.4, key: false)
        let viewer = H264Viewer(format: nil, policy: .init(), feed: feed, now: nanos(0.4))
        #expect(feed.demand(.main) == (1, true))
        var events: [H264Viewer.Event] = []
        // The only keyframe is 0.4 s behind the newest: too old to start on; it asks for one.
        #expect(drain(viewer, feed, now: 0.4, events: &events) == [])
        #expect(feed.demand(.main).keyframeWanted)
        publish(feed, seq: 4, at: 0.45, key: true)
        publish(feed, seq: 5, at: 0.5, key: false)
        #expect(drain(viewer, feed, now: 0.5, events: &events) == [4, 5])
        publish(feed, seq: 6, at: 0.55, key: false)
        #expect(viewer.hasWork(feed))
        #expect(drain(viewer, feed, now: 0.55, events: &events) == [6])
        #expect(!viewer.hasWork(feed))
        #expect(events.isEmpty)
        viewer.leave(feed)
        #expect(feed.demand(.main).viewers == 0)
    }

    @Test("a viewer past the lag is moved ahead to the next keyframe, counted, and a keyframe asked for")
    func skipsToTheNextKeyframe() {
        let feed = VideoFeed()
        var policy = H264Viewer.Policy()
        policy.downgradeSkips = 99
        publish(feed, seq: 1, at: 0, key: true)
        let viewer = H264Viewer(format: nil, policy: policy, feed: feed, now: 0)
        var events: [H264Viewer.Event] = []
        #expect(drain(viewer, feed, now: 0, events: &events) == [1])
        _ = feed.demand(.main)
        // Its socket took nothing for 0.6 s while frames kept coming.
        for n in 2...19 { publish(feed, seq: UInt64(n), at: Double(n - 1) / 30 + 0.0, key: false) }
        publish(feed, seq: 20, at: 0.6, key: false)
        #expect(drain(viewer, feed, now: 0.6, events: &events) == [])
        #expect(events == [.skippedToKeyframe])
        #expect(feed.demand(.main).keyframeWanted)
        // Deltas after the skip point are never sent; the next keyframe is.
        publish(feed, seq: 21, at: 0.63, key: false)
        #expect(drain(viewer, feed, now: 0.63, events: &events) == [])
        publish(feed, seq: 22, at: 0.66, key: true)
        publish(feed, seq: 23, at: 0.7, key: false)
        #expect(drain(viewer, feed, now: 0.7, events: &events) == [22, 23])
        #expect(events == [.skippedToKeyframe])
    }

    @Test("a place that fell out of the ring counts as behind")
    func lostPlace() {
        let feed = VideoFeed(capacity: 4)
        publish(feed, seq: 1, at: 0, key: true)
        let viewer = H264Viewer(format: nil, policy: .init(), feed: feed, now: 0)
        var events: [H264Viewer.Event] = []
        #expect(drain(viewer, feed, now: 0, events: &events) == [1])
        for n in 2...8 { publish(feed, seq: UInt64(n), at: Double(n) * 0.01, key: n == 7) }
        #expect(feed.unit(.main, at: 2) == nil)
        // Its next (index 2) is gone though little time passed: moved ahead to the keyframe at 7.
        #expect(drain(viewer, feed, now: 0.1, events: &events) == [7, 8])
        #expect(events == [.skippedToKeyframe])
    }

    @Test("auto: two moves ahead within the window go to low; pinned viewers stay")
    func downgrades() {
        for pinned in [nil, VideoRendition.main] {
            let feed = VideoFeed()
            let viewer = H264Viewer(format: pinned, policy: .init(), feed: feed, now: 0)
            var events: [H264Viewer.Event] = []
            var seq: UInt64 = 0
            var t = 0.0
            func tick(key: Bool = false) {
                seq += 1
                t += 0.05
                publish(feed, seq: seq, at: t, key: key)
            }
            tick(key: true)
            _ = drain(viewer, feed, now: t, events: &events)
            for _ in 0..<2 {
                for _ in 0..<12 { tick() }   // 0.6 s without a writeable callback
                _ = drain(viewer, feed, now: t, events: &events)
                tick(key: true)
                _ = drain(viewer, feed, now: t, events: &events)
            }
            let skips = events.filter { $0 == .skippedToKeyframe }.count
            if pinned == nil {
                #expect(skips == 2)
                #expect(events.last == .moved(from: .main, to: .low))
                #expect(viewer.rendition == .low)
                #expect(feed.demand(.main).viewers == 0 && feed.demand(.low) == (1, true))
            } else {
                #expect(skips == 2)
                #expect(viewer.rendition == .main)
            }
        }
    }

    @Test("auto: back to main after upgradeAfter on low; a try that fails at once doubles the wait")
    func upgradesWithBackoff() {
        let feed = VideoFeed()
        var policy = H264Viewer.Policy()
        policy.downgradeSkips = 1
        let viewer = H264Viewer(format: nil, policy: policy, feed: feed, now: 0)
        var events: [H264Viewer.Event] = []
        publish(feed, .main, seq: 1, at: 0, key: true)
        _ = drain(viewer, feed, now: 0, events: &events)
        publish(feed, .main, seq: 2, at: 0.1, key: false)
        publish(feed, .main, seq: 3, at: 1, key: false)
        _ = drain(viewer, feed, now: 1, events: &events)
        #expect(viewer.rendition == .low)
        // 19 s on low: stays; at 21 s it tries main again.
        _ = drain(viewer, feed, now: 20, events: &events)
        #expect(viewer.rendition == .low)
        _ = drain(viewer, feed, now: 21.1, events: &events)
        #expect(viewer.rendition == .main)
        #expect(events.last == .moved(from: .low, to: .main))
        // It falls behind on main within 15 s: back to low, and the next try waits 40 s.
        publish(feed, .main, seq: 4, at: 22, key: true)
        _ = drain(viewer, feed, now: 22, events: &events)
        publish(feed, .main, seq: 5, at: 23, key: false)
        publish(feed, .main, seq: 6, at: 24, key: false)
        _ = drain(viewer, feed, now: 24, events: &events)
        #expect(viewer.rendition == .low)
        _ = drain(viewer, feed, now: 24 + 39, events: &events)
        #expect(viewer.rendition == .low)
        _ = drain(viewer, feed, now: 24 + 41, events: &events)
        #expect(viewer.rendition == .main)
    }
}
