import Foundation
import Logging
import Testing
@testable import SightlineSupport
@testable import SightlineVision
@testable import SightlinePipeline
import SightlineTesting

/// The H.264 sink's encoding step, run on the test's thread with real x264.
@Suite("Video: H.264 feed encoder")
struct H264FeedEncoderTests {
    func frame(_ seq: UInt64, width: Int = 64, height: Int = 48, interval: UInt64 = 33_333_333) -> ProcessedFrame {
        let image = ImageBuffer(width: width, height: height)
        for y in 0..<height {
            for x in 0..<width {
                let offset = y * image.stride + x * 3
                image.bytes[offset] = UInt8((x * 4 + Int(seq) * 3) & 0xFF)
                image.bytes[offset + 1] = UInt8((y * 5) & 0xFF)
                image.bytes[offset + 2] = UInt8((x + y) & 0xFF)
            }
        }
        let box = Detection.template(label: "logo", score: 0.9, scale: 1, angle: 0,
                                     box: NormalizedBox(x: 0.1, y: 0.2, w: 0.3, h: 0.4))
        return ProcessedFrame(seq: seq, capturedAt: 1000 + Double(seq) / 30, capturedNanos: seq * interval,
                              width: width, height: height, jpeg: Data([0xFF, 0xD8]), image: image, detections: [box])
    }

    func makeEncoder(_ feed: VideoFeed, _ stats: VideoStats, settings: VideoSettings = VideoSettings(),
                     clock: any SightlineClock = .real) -> (H264FeedEncoder, EncodingFlag) {
        let flag = EncodingFlag()
        return (H264FeedEncoder(feed: feed, stats: stats, settings: settings, sourceFPS: { 30 },
                                wake: LockedCallback<Void, Void>(), encoding: flag, logger: Logger(label: "test"),
                                clock: clock), flag)
    }

    @Test("encodes nothing while nobody watches; for a viewer, a keyframe first and the frame's JSON and SEI with each unit")
    func encodesForViewers() throws {
        let feed = VideoFeed()
        let stats = VideoStats()
        let clock = ManualClock()
        let (encoder, flag) = makeEncoder(feed, stats, clock: clock)
        encoder.consume(frame(1))
        let idle = flag.value.load(ordering: .relaxed)
        #expect(feed.newest(.main) == nil && !idle)
        feed.viewerJoined(.main)
        for seq in UInt64(2)...6 { encoder.consume(frame(seq)) }
        let encoding = flag.value.load(ordering: .relaxed)
        #expect(encoding)
        let units = (1...5).compactMap { feed.unit(.main, at: UInt64($0)) }
        #expect(units.map(\.seq) == [2, 3, 4, 5, 6])
        #expect(units.map(\.isKeyframe) == [true, false, false, false, false])
        for unit in units {
            let json = try JSONSerialization.jsonObject(with: unit.json) as! [String: Any]
            #expect(json["seq"] as? Int == Int(unit.seq))
            #expect(json["jpegBytes"] == nil)
            let video = json["video"] as! [String: Any]
            #expect(video["bytes"] as? Int == unit.data.count)
            #expect(video["key"] as? Bool == unit.isKeyframe)
            #expect((video["codec"] as? String)?.hasPrefix("avc1.64") == unit.isKeyframe || video["codec"] == nil)
            let sei = AnnexB.units(in: unit.data).first { $0.type == AnnexB.UnitType.sei }
            #expect(sei != nil)
            let payload = try #require(try SEIBoxes.payload(in: unit.data))
            #expect(payload.seq == unit.seq && payload.detections.count == 1)
        }
        let snapshot = stats.snapshot(feed: feed, webSocketClients: 1)
        #expect(snapshot.renditions[0].frames == 5 && snapshot.renditions[0].keyframes.requested == 1)
        #expect(snapshot.renditions[0].width == 64 && snapshot.renditions[0].encoding)
        // A keyframe asked for (rate limit: at most one per 0.25 s; the first came just now, so let 0.3 s of the clock pass).
        feed.requestKeyframe(.main)
        clock.advance(by: 0.3)
        encoder.consume(frame(7))
        #expect(feed.newest(.main)?.isKeyframe == true)
        // The last viewer goes: the encoder is freed on the next frame and its units discarded.
        feed.viewerLeft(.main)
        encoder.consume(frame(8))
        let freed = !flag.value.load(ordering: .relaxed)
        #expect(feed.newest(.main) == nil && freed)
        #expect(stats.snapshot(feed: feed, webSocketClients: 0).renditions[0].encoding == false)
    }

    @Test("low: half the size, at most lowMaxFPS; a new frame size makes a new encoder that starts on a keyframe")
    func lowRenditionAndResize() throws {
        let feed = VideoFeed()
        let (encoder, _) = makeEncoder(feed, VideoStats())
        feed.viewerJoined(.low)
        for seq in UInt64(1)...6 { encoder.consume(frame(seq)) }   // 30 fps in, 15 fps out
        let low = (1...3).compactMap { feed.unit(.low, at: UInt64($0)) }
        #expect(low.map(\.seq) == [1, 3, 5])
        #expect(feed.renditions().first { $0.rendition == .low }?.width == 32)
        encoder.consume(frame(7, width: 80, height: 60))
        let resized = try #require(feed.newest(.low))
        #expect(resized.seq == 7 && resized.isKeyframe)
        #expect(feed.renditions().first { $0.rendition == .low }?.width == 40)
    }

    @Test("low from a 20 fps source: three frames in four, 15 fps, not every other frame")
    func lowRateFromTwentyFPS() {
        let feed = VideoFeed()
        let (encoder, _) = makeEncoder(feed, VideoStats())
        feed.viewerJoined(.low)
        for seq in UInt64(1)...12 { encoder.consume(frame(seq, interval: 50_000_000)) }
        let low = (1...12).compactMap { feed.unit(.low, at: UInt64($0)) }.map(\.seq)
        #expect(low == [1, 2, 4, 5, 6, 8, 9, 10, 12])
    }
}
