import Foundation
import Testing
@testable import SightlineVision
@testable import SightlinePipeline
@testable import SightlineStreaming
import SightlineTesting

/// The source's own H.264 passed on: the unit filter, the feed's keeping
/// from a camera's keyframe, a joiner's catch-up, and the relay's order and boxes.
@Suite("Video: the source's own encoding passed on")
struct SourcePassThroughTests {
    static let sps = Data([0x67, 0x4d, 0x40, 0x28, 0xaa])
    static let pps = Data([0x68, 0xee, 0x3c, 0x80])
    static let idr = Data([0x65, 0x88, 0x84, 0x00, 0x33])
    static let delta = Data([0x41, 0x9a, 0x22, 0x11])

    func annexB(_ units: Data...) -> Data {
        var out = Data()
        for unit in units { out.append(contentsOf: [0, 0, 0, 1]); out.append(unit) }
        return out
    }

    func types(_ data: Data) -> [UInt8] { AnnexB.units(in: data).map(\.type) }

    // MARK: - H264UnitFilter

    @Test("an IDR without SPS and PPS gets the container's, after any delimiter; one with them is left as it is")
    func keyframesCarryTheirParameterSets() throws {
        var filter = H264UnitFilter(parameterSets: annexB(Self.sps, Self.pps))
        let bareUnit = filter.unit(from: annexB(Self.idr), lostBefore: false)
        let bare = try #require(bareUnit)
        #expect(bare.isKeyframe)
        #expect(types(bare.data) == [7, 8, 5])
        let delimitedUnit = filter.unit(from: annexB(Data([0x09, 0xf0]), Self.idr), lostBefore: false)
        let delimited = try #require(delimitedUnit)
        #expect(types(delimited.data) == [9, 7, 8, 5])
        let whole = annexB(Self.sps, Self.pps, Self.idr)
        #expect(filter.unit(from: whole, lostBefore: false)?.data == whole)
    }

    @Test("nothing before the first IDR, nor between a lost unit and the next IDR; in-band SPS and PPS are remembered")
    func waitsForKeyframes() throws {
        var filter = H264UnitFilter()
        #expect(filter.unit(from: annexB(Self.delta), lostBefore: false) == nil)
        // No parameter sets known at all: an IDR without them cannot be decoded.
        #expect(filter.unit(from: annexB(Self.idr), lostBefore: false) == nil)
        #expect(filter.unit(from: annexB(Self.sps, Self.pps, Self.idr), lostBefore: false)?.isKeyframe == true)
        #expect(filter.unit(from: annexB(Self.delta), lostBefore: false)?.isKeyframe == false)
        #expect(filter.unit(from: annexB(Self.delta), lostBefore: true) == nil)
        #expect(filter.unit(from: annexB(Self.delta), lostBefore: false) == nil)
        let nextUnit = filter.unit(from: annexB(Self.idr), lostBefore: false)
        let next = try #require(nextUnit)
        #expect(types(next.data) == [7, 8, 5], "the in-band SPS and PPS seen before")
        #expect(filter.unit(from: annexB(Self.delta), lostBefore: false) != nil)
        #expect(filter.unit(from: annexB(Data([0x06, 0x05, 0x01, 0x00, 0x80])), lostBefore: false) == nil, "no slice")
    }

    @Test("a JPEG with Huffman tables passes; one without (AVI1 MJPEG) or not a JPEG does not")
    func mjpegNeedsHuffmanTables() throws {
        let image = ImageBuffer(width: 32, height: 16, channels: 3)
        let jpeg = try JPEGEncoder(quality: 80).encode(image)
        #expect(MJPEGUnitFilter.hasHuffmanTables(jpeg))
        #expect(MJPEGUnitFilter.unit(from: jpeg)?.codec == .mjpeg)
        // Drop the DHT segments, as UVC cameras' MJPEG does.
        var stripped = Data(jpeg.prefix(2))
        var i = 2
        while i + 4 <= jpeg.count, jpeg[i] == 0xFF, jpeg[i + 1] != 0xDA {
            let length = Int(jpeg[i + 2]) << 8 | Int(jpeg[i + 3])
            if jpeg[i + 1] != 0xC4 { stripped.append(jpeg[i..<(i + 2 + length)]) }
            i += 2 + length
        }
        stripped.append(jpeg[i...])
        #expect(!MJPEGUnitFilter.hasHuffmanTables(stripped))
        #expect(!MJPEGUnitFilter.hasHuffmanTables(Data([1, 2, 3, 4, 5])))
    }

    // MARK: - VideoFeed and the viewer on a camera's units

    func publish(_ feed: VideoFeed, seq: UInt64, at: Double, key: Bool, by producer: VideoFeed.Producer = .source) {
        feed.publish(.main, seq: seq, capturedNanos: UInt64(at * 1e9), json: Data("{\"seq\":\(seq)}".utf8),
                     data: Data([0, 0, 1, key ? 0x65 : 0x41]), isKeyframe: key, width: 64, height: 48, by: producer)
    }

    @Test("a source's units are kept from the newest keyframe on, beyond capacity, up to maxUnits")
    func keepsFromTheNewestKeyframe() {
        let feed = VideoFeed(capacity: 10, maxUnits: 100)
        feed.claim(.main, by: .source)
        for seq in 1...140 { publish(feed, seq: UInt64(seq), at: Double(seq) / 25, key: seq == 1 || seq == 51) }
        #expect(feed.units(.main, after: 0).units.map(\.seq) == Array(51...140), "from the newest keyframe, 90 units back")
        for seq in 141...160 { publish(feed, seq: UInt64(seq), at: Double(seq) / 25, key: false) }
        // Past maxUnits the keyframe goes, and deltas without one are of use only to readers already in them.
        #expect(feed.units(.main, after: 0).units.map(\.seq) == Array(151...160), "no more than maxUnits, then capacity")
        // The encoder's units are not kept past capacity.
        let encoded = VideoFeed(capacity: 10, maxUnits: 100)
        for seq in 1...60 { publish(encoded, seq: UInt64(seq), at: Double(seq) / 25, key: seq == 1, by: .encoder) }
        #expect(encoded.units(.main, after: 0).units.count == 10)
    }

    @Test("only the producer that has the lane publishes; claiming it clears what the other made")
    func oneProducerAtATime() {
        let feed = VideoFeed()
        publish(feed, seq: 1, at: 0, key: true, by: .encoder)
        feed.claim(.main, by: .source)
        #expect(feed.newest(.main) == nil)
        #expect(!feed.keyframesOnRequest(.main))
        publish(feed, seq: 2, at: 0.04, key: false, by: .encoder)
        feed.discard(.main)   // the encoder's discard: not its lane any more
        publish(feed, seq: 3, at: 0.08, key: true)
        #expect(feed.newest(.main)?.seq == 3)
        #expect(feed.units(.main, after: 0).units.map(\.seq) == [3])
    }

    @Test("a joiner on a camera's stream starts at its newest keyframe however old, with a notice, and gets every unit since")
    func joinerCatchesUp() throws {
        let feed = VideoFeed()
        feed.claim(.main, by: .source)
        for seq in 1...80 { publish(feed, seq: UInt64(seq), at: Double(seq) / 25, key: seq == 1 || seq == 41) }
        let viewer = H264Viewer(format: .main, policy: H264Viewer.Policy(), feed: feed, now: 0)
        let now = UInt64(80.0 / 25 * 1e9)
        guard case .notice(let text) = viewer.step(feed, now: now).0 else { Issue.record("no catch-up notice"); return }
        let notice = try #require(try JSONSerialization.jsonObject(with: text) as? [String: Any])
        #expect(notice["type"] as? String == "catchUp")
        #expect(notice["seq"] as? Int == 41)
        #expect(notice["through"] as? Int == 80)
        var sent: [UInt64] = []
        for _ in 0..<200 {
            switch viewer.step(feed, now: now).0 {
            case .accessUnit(let unit): sent.append(unit.seq)
            case .wait: break
            default: continue
            }
            if sent.last == 80 { break }
        }
        #expect(sent == Array(41...80), "from the newest keyframe, none skipped for age (1.6 s old)")
        #expect(viewer.isCatchingUp(40 + 1))
        // Live from here: the next unit follows at once.
        publish(feed, seq: 81, at: 81.0 / 25, key: false)
        guard case .json(let unit) = viewer.step(feed, now: now + 40_000_000).0 else { Issue.record("no next frame"); return }
        #expect(unit.seq == 81)
    }

    @Test("a viewer that falls behind on a camera's stream waits for the camera's next keyframe (nothing is asked of it)")
    func laggerWaitsForTheNextKeyframe() {
        let feed = VideoFeed()
        feed.claim(.main, by: .source)
        publish(feed, seq: 1, at: 0, key: true)
        let viewer = H264Viewer(format: .main, policy: H264Viewer.Policy(), feed: feed, now: 0)
        _ = viewer.step(feed, now: 0)   // JSON of 1
        _ = viewer.step(feed, now: 0)   // unit of 1
        for seq in 2...40 { publish(feed, seq: UInt64(seq), at: Double(seq) / 25, key: false) }
        let late = UInt64(40.0 / 25 * 1e9)
        let (step, events) = viewer.step(feed, now: late)
        #expect(events.contains(.skippedToKeyframe))
        if case .wait = step {} else { Issue.record("it should wait, not send a delta without its reference") }
        publish(feed, seq: 41, at: 41.0 / 25, key: true)
        guard case .json(let unit) = viewer.step(feed, now: late + 40_000_000).0 else { Issue.record("no keyframe"); return }
        #expect(unit.seq == 41 && unit.isKeyframe)
    }

    @Test("a deferring hold alone lets main wait (keeping its seconds); a viewer, a plain hold or wantLive makes it live")
    func liveDemandOfHolds() {
        let feed = VideoFeed()
        #expect(feed.liveDemand(.main) == (false, 0))
        feed.holdEncoder(.main, deferringUpTo: 4.5)
        #expect(feed.liveDemand(.main) == (false, 4.5))
        #expect(feed.demand(.main).viewers == 1, "the hold still counts as a consumer")
        feed.wantLive(.main)
        #expect(feed.liveDemand(.main).live)
        feed.unwantLive(.main)
        feed.holdEncoder(.main)
        #expect(feed.liveDemand(.main).live, "a hold that cannot defer")
        feed.releaseEncoder(.main)
        feed.viewerJoined(.main)
        #expect(feed.liveDemand(.main).live)
        feed.viewerLeft(.main)
        feed.releaseEncoder(.main, deferringUpTo: 4.5)
        #expect(feed.liveDemand(.main) == (false, 0))
        #expect(feed.demand(.main).viewers == 0)
    }

    // MARK: - SourceVideoRelay

    func frame(_ seq: UInt64, key: Bool) -> Frame {
        Frame(seq: seq, capturedAt: 1000 + Double(seq) / 25, capturedNanos: seq * 40_000_000,
              image: ImageBuffer(width: 64, height: 48, channels: 3),
              sourceUnit: SourceUnit(codec: .h264, data: key ? annexB(Self.sps, Self.pps, Self.idr) : annexB(Self.delta),
                                     isKeyframe: key))
    }

    func processed(_ seq: UInt64, label: String) -> ProcessedFrame {
        let box = NormalizedBox(x: 0.1, y: 0.2, w: 0.3, h: 0.4)
        return ProcessedFrame(seq: seq, capturedAt: 1000 + Double(seq) / 25, capturedNanos: seq * 40_000_000, width: 64,
                              height: 48, jpeg: Data(), detections: [Detection(kind: .template, label: label, score: 0.9, box: box)])
    }

    @Test("units go out in capture order once each frame's fate is known; unanalysed ones carry the last analysed boxes, named")
    func relayKeepsOrderAndNamesBoxes() throws {
        let feed = VideoFeed()
        let relay = SourceVideoRelay(feed: feed, stats: VideoStats()) {}
        relay.sessionStarted(SourceFormat(width: 64, height: 48, fps: 25, pixelFormat: "h264", passedOn: .h264))
        #expect(relay.isActive)
        relay.captured(frame(1, key: true))
        relay.captured(frame(2, key: false))
        relay.captured(frame(3, key: false))
        relay.skipped(seq: 2)                           // superseded while 1 was analysed
        #expect(feed.newest(.main) == nil, "2 waits for 1")
        relay.analysed(processed(1, label: "one"))
        relay.analysed(processed(3, label: "three"))
        let units = feed.units(.main, after: 0).units
        #expect(units.map(\.seq) == [1, 2, 3])
        let messages = try units.map { try #require(try JSONSerialization.jsonObject(with: $0.json) as? [String: Any]) }
        #expect(messages[0]["boxesFrom"] == nil)
        #expect(messages[1]["boxesFrom"] as? Int == 1)
        #expect(messages[2]["boxesFrom"] == nil)
        let labels = messages.map { (($0["detections"] as? [[String: Any]])?.first?["label"] as? String) }
        #expect(labels == ["one", "one", "three"])
        // The SEI says the same as the JSON.
        let sei = try #require(try SEIBoxes.payload(in: units[1].data))
        #expect(sei.seq == 2 && sei.boxesFrom == 1 && sei.detections.first?.label == "one")
        #expect(try SEIBoxes.payload(in: units[2].data)?.boxesFrom == nil)
        #expect(units[0].isKeyframe && !units[1].isKeyframe)
    }

    @Test("a pipeline that never answers holds at most maxWaiting units back; a session that passes nothing lets go of main")
    func relayIsBounded() {
        let feed = VideoFeed()
        let relay = SourceVideoRelay(feed: feed, stats: VideoStats(), maxWaiting: 5) {}
        relay.sessionStarted(SourceFormat(width: 64, height: 48, fps: 25, pixelFormat: "h264", passedOn: .h264))
        for seq in 1...8 { relay.captured(frame(UInt64(seq), key: seq == 1)) }
        #expect(feed.units(.main, after: 0).units.map(\.seq) == [1, 2, 3])
        relay.sessionStarted(SourceFormat(width: 64, height: 48, fps: 25, pixelFormat: "synthetic"))
        #expect(!relay.isActive)
        #expect(feed.keyframesOnRequest(.main))
        #expect(feed.newest(.main) == nil)
    }
}
