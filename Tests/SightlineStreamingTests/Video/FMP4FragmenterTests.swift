import Foundation
import Testing
@testable import SightlinePipeline
@testable import SightlineStreaming
import SightlineTesting

/// `/ws?video=fmp4`: the fragments libavformat makes for MSE, read back box by box.
@Suite("Video: fragmented MP4 for MSE")
struct FMP4FragmenterTests {
    /// The top-level boxes of `data` as (type, payload).
    static func boxes(_ data: Data, from start: Int = 0, to end: Int? = nil) -> [(String, Data)] {
        var found: [(String, Data)] = []
        var at = data.startIndex + start
        let limit = end.map { data.startIndex + $0 } ?? data.endIndex
        while at + 8 <= limit {
            let size = Int(data[at..<at + 4].reduce(0) { $0 << 8 | UInt32($1) })
            let type = String(decoding: data[at + 4..<at + 8], as: UTF8.self)
            guard size >= 8, at + size <= limit else { break }
            found.append((type, Data(data[at + 8..<at + size])))
            at += size
        }
        return found
    }

    /// `tfdt` (its 64-bit base media decode time) and the mdat's size in one fragment.
    static func fragmentTime(_ fragment: Data) -> (tfdt: Int64?, mdatBytes: Int) {
        var tfdt: Int64?
        var mdat = 0
        for (type, payload) in boxes(fragment) {
            if type == "mdat" { mdat = payload.count }
            guard type == "moof" else { continue }
            for (inner, traf) in boxes(payload) where inner == "traf" {
                for (leaf, body) in boxes(traf) where leaf == "tfdt" {
                    tfdt = body.dropFirst(4).prefix(8).reduce(Int64(0)) { $0 << 8 | Int64($1) }
                }
            }
        }
        return (tfdt, mdat)
    }

    @Test("an init segment, then one fragment per unit dated by its own pts, from capture times without holes")
    func fragmentsCarryTheirPts() throws {
        let encoder = try H264Encoder(width: 320, height: 240, fps: 30)
        let fragmenter = FMP4Fragmenter()
        // Gaps of 33, 33, 50 (a late frame) and 33 ms.
        let nanos: [UInt64] = [1_000_000_000, 1_033_000_000, 1_066_000_000, 1_116_000_000, 1_149_000_000]
        var pts: [Int64] = []
        for (index, captured) in nanos.enumerated() {
            let encoded = try encoder.encode(MovingScene.frame(index, width: 320, height: 240), forceKeyframe: index == 0)
            let out = try fragmenter.fragment(encoded.data, isKeyframe: encoded.isKeyframe, capturedNanos: captured,
                                              width: 320, height: 240)
            if index == 0 {
                let initSegment = try #require(out.initSegment)
                #expect(Self.boxes(initSegment).map(\.0) == ["ftyp", "moov"])
                #expect(out.codec?.hasPrefix("avc1.") == true)
            } else {
                #expect(out.initSegment == nil)
            }
            #expect(Self.boxes(out.fragment).map(\.0) == ["moof", "mdat"])
            let (tfdt, mdat) = Self.fragmentTime(out.fragment)
            #expect(tfdt == out.pts, "fragment \(index): tfdt \(String(describing: tfdt)) against pts \(out.pts)")
            // Length-prefixed: the same NAL units, each start code replaced by a 4-byte length.
            #expect(mdat >= encoded.data.count - 4 * 8 && mdat <= encoded.data.count + 4 * 8)
            pts.append(out.pts)
        }
        // 1/25 s for the first, then each unit lasts the gaps so far, smoothed: 33, 33, then 33 + 0.2 x 17 ms.
        let durations: [Int64] = [3_600, 2_970, 2_970, 2_970 + 306]
        var expected: [Int64] = [0]
        for duration in durations { expected.append(expected.last! + duration) }
        #expect(pts == expected)
    }

    @Test("the stream starts on a keyframe; new parameter sets or size start a new init segment at 0")
    func startsOnKeyframes() throws {
        let encoder = try H264Encoder(width: 320, height: 240, fps: 30)
        let fragmenter = FMP4Fragmenter()
        _ = try encoder.encode(MovingScene.frame(0, width: 320, height: 240), forceKeyframe: true)
        let delta = try encoder.encode(MovingScene.frame(1, width: 320, height: 240))
        #expect(!delta.isKeyframe)
        #expect(throws: FMP4Fragmenter.NoKeyframe.self) {
            try fragmenter.fragment(delta.data, isKeyframe: false, capturedNanos: 1, width: 320, height: 240)
        }
        let key = try encoder.encode(MovingScene.frame(2, width: 320, height: 240), forceKeyframe: true)
        #expect(try fragmenter.fragment(key.data, isKeyframe: true, capturedNanos: 10, width: 320, height: 240).initSegment != nil)
        let small = try H264Encoder(width: 160, height: 120, fps: 30)
        let other = try small.encode(MovingScene.frame(3, width: 160, height: 120), forceKeyframe: true)
        let moved = try fragmenter.fragment(other.data, isKeyframe: true, capturedNanos: 50_000_000, width: 160, height: 120)
        #expect(moved.initSegment != nil && moved.pts == 0)
    }

    @Test("video=fmp4 is parsed like video=h264, with the same renditions")
    func parsesFMP4() throws {
        func parse(_ query: [String: String], h264: Bool = true) -> StreamFormat? {
            try? StreamFormat.parse(query, h264Available: h264, lowAvailable: true).get()
        }
        #expect(parse(["video": "fmp4"]) == .fmp4(pinned: nil))
        #expect(parse(["video": "fmp4", "rendition": "low"]) == .fmp4(pinned: .low))
        #expect(parse(["video": "fmp4", "rendition": "tiny"]) == nil)
        #expect(parse(["video": "fmp4"], h264: false) == nil)
        #expect(StreamFormat.fmp4(pinned: .main).video?.fmp4 == true)
        #expect(StreamFormat.h264(pinned: nil).video?.fmp4 == false)
        #expect(StreamFormat.jpeg.video == nil)
    }

    @Test("the frame JSON gets its fragment's pts and length; an init notice comes first")
    func messages() throws {
        let encoder = try H264Encoder(width: 320, height: 240, fps: 30)
        let encoded = try encoder.encode(MovingScene.frame(0, width: 320, height: 240), forceKeyframe: true)
        let unit = VideoFeed.Unit(index: 1, seq: 7, capturedNanos: 5, capturedAt: 1, json: Data(#"{"type":"frame","seq":7}"#.utf8),
                                  data: encoded.data, isKeyframe: true, width: 320, height: 240)
        var fragment = Data()
        let messages = try WebSocketVideoViewer.fmp4Messages(unit, FMP4Fragmenter(), fragment: &fragment)
        #expect(messages.map(\.binary) == [false, true, false])
        let notice = try JSONSerialization.jsonObject(with: messages[0].data) as? [String: Any]
        #expect(notice?["type"] as? String == "fmp4Init")
        #expect(notice?["bytes"] as? Int == messages[1].data.count)
        #expect(notice?["timescale"] as? Int == 90_000)
        let json = try JSONSerialization.jsonObject(with: messages[2].data) as? [String: Any]
        let fmp4 = json?["fmp4"] as? [String: Any]
        #expect(json?["seq"] as? Int == 7)
        #expect(fmp4?["pts"] as? Int == 0 && fmp4?["bytes"] as? Int == fragment.count)
    }
}
