import Foundation
import Testing
@testable import SightlineSupport
@testable import SightlineVision
@testable import SightlinePipeline
@testable import SightlineEvents
import SightlineTesting
import SightlineEventsTesting

/// JPEG only on demand: a frame's JPEG is made when someone takes it, once
/// per size however many take it, at most `video.jpegMaxWidth` wide unless
/// the full picture is asked for, and an MJPEG source's own JPEG is passed on.
@Suite struct FrameJPEGTests {
    /// A frame with something in it (a flat one would make every size the same tiny JPEG).
    static func picture(width: Int, height: Int) -> ImageBuffer {
        let image = ImageBuffer(width: width, height: height)
        for y in 0..<height {
            for x in 0..<width {
                let offset = y * image.stride + x * 3
                image.bytes[offset] = UInt8((x * 7) & 0xFF)
                image.bytes[offset + 1] = UInt8((y * 5) & 0xFF)
                image.bytes[offset + 2] = UInt8((x ^ y) & 0xFF)
            }
        }
        return image
    }

    static func size(_ jpeg: Data) throws -> (Int, Int) {
        let size = try JPEGDecoder().size(of: jpeg)
        return (size.width, size.height)
    }

    /// Counts the encodes a `FrameJPEG` reports.
    final class Encodes: Sendable {
        private let count = Locked(0)
        var value: Int { count.withLock { $0 } }
        var report: @Sendable (Double) -> Void { { [self] _ in count.withLock { $0 += 1 } } }
    }

    @Test func theStreamSizeIsAtMostTheMaxWidthWithTheProportionsKept() {
        let rule = JPEGSizeRule(maxWidth: 1280)
        #expect(rule.scaled(width: 1920, height: 1080)! == (1280, 720))
        #expect(rule.scaled(width: 3840, height: 2160)! == (1280, 720))
        #expect(rule.scaled(width: 1920, height: 1200)! == (1280, 800))
        #expect(rule.scaled(width: 2592, height: 1944)! == (1280, 960))
        #expect(rule.scaled(width: 1281, height: 721)! == (1280, 720))
        #expect(rule.scaled(width: 1280, height: 720) == nil, "at the limit: its own size")
        #expect(rule.scaled(width: 640, height: 480) == nil)
        #expect(rule.scaled(width: 1080, height: 1920) == nil, "a portrait frame within the width")
        #expect(JPEGSizeRule(maxWidth: 0).scaled(width: 3840, height: 2160) == nil, "0: full size")
        #expect(JPEGSizeRule().maxWidth == 1280)
        #expect(JPEGSize(query: [:]) == .stream && JPEGSize(query: ["full": "1"]) == .full)
        #expect(JPEGSize(query: ["full": "0"]) == .stream)
    }

    @Test func nothingIsEncodedUntilAskedAndEachSizeOnce() throws {
        let encodes = Encodes()
        let jpeg = FrameJPEG(image: Self.picture(width: 1920, height: 1080), quality: 80,
                             rule: JPEGSizeRule(maxWidth: 1280), encoded: encodes.report)
        #expect(jpeg.made(.stream) == nil && jpeg.made(.full) == nil && encodes.value == 0)
        let stream = try jpeg.make(.stream)
        #expect(try Self.size(stream) == (1280, 720))
        #expect(try jpeg.make(.stream) == stream && jpeg.made(.stream) == stream)
        #expect(encodes.value == 1 && jpeg.made(.full) == nil)
        let full = try jpeg.make(.full, encoder: try JPEGEncoder(quality: 80))
        #expect(try Self.size(full) == (1920, 1080) && full.count > stream.count)
        #expect(encodes.value == 2)
    }

    @Test func manyThreadsAskingAtOnceGetOneEncode() throws {
        let encodes = Encodes()
        let jpeg = FrameJPEG(image: Self.picture(width: 1920, height: 1080), rule: JPEGSizeRule(maxWidth: 1280),
                             encoded: encodes.report)
        let results = Locked<[Data]>([])
        let group = DispatchGroup()
        for _ in 0..<6 {
            group.enter()
            Thread {
                if let data = try? jpeg.make(.stream) { results.withLock { $0.append(data) } }
                group.leave()
            }.start()
        }
        #expect(group.wait(timeout: .now() + 30) == .success)
        let made = results.withLock { $0 }
        #expect(made.count == 6 && Set(made).count == 1)
        #expect(encodes.value == 1)
    }

    @Test func aFrameWithinTheLimitIsOneJPEGForBothSizes() throws {
        let encodes = Encodes()
        let jpeg = FrameJPEG(image: Self.picture(width: 640, height: 480), rule: JPEGSizeRule(maxWidth: 1280),
                             encoded: encodes.report)
        let stream = try jpeg.make(.stream)
        #expect(jpeg.made(.full) == stream)
        #expect(try Self.size(stream) == (640, 480))
        #expect(encodes.value == 1)
        let unlimited = FrameJPEG(image: Self.picture(width: 1920, height: 1080), rule: JPEGSizeRule(maxWidth: 0))
        #expect(try Self.size(try unlimited.make(.stream)) == (1920, 1080))
    }

    @Test func anMJPEGSourcesJPEGIsPassedOnAsItIsAtEverySize() throws {
        let encodes = Encodes()
        let own = try JPEGEncoder(quality: 90).encode(Self.picture(width: 1920, height: 1080))
        let jpeg = FrameJPEG(image: Self.picture(width: 1920, height: 1080),
                             source: SourceUnit(codec: .mjpeg, data: own, isKeyframe: true),
                             rule: JPEGSizeRule(maxWidth: 1280), encoded: encodes.report)
        #expect(jpeg.fromSource)
        #expect(jpeg.made(.stream) == own && jpeg.made(.full) == own)
        #expect(try jpeg.make(.stream) == own && encodes.value == 0)
        // An H.264 access unit is no JPEG: that frame's JPEG is encoded from its pixels.
        let h264 = FrameJPEG(image: Self.picture(width: 64, height: 48),
                             source: SourceUnit(codec: .h264, data: Data([0, 0, 0, 1, 0x65]), isKeyframe: true))
        #expect(!h264.fromSource && h264.made(.stream) == nil)
        #expect(try Self.size(try h264.make(.stream)) == (64, 48))
    }

    // MARK: - Through the pipeline and the stream sink

    func pipeline(_ sinks: [FrameSink], stats: PipelineStats, maxWidth: Int = 1280) throws -> Pipeline {
        var options = Pipeline.Options()
        options.jpegSize = JPEGSizeRule(maxWidth: maxWidth)
        return Pipeline(mailbox: FrameMailbox(), stats: stats, stages: [], encoder: try JPEGEncoder(), sinks: sinks,
                        options: options, logger: quietLogger(), budgetSeconds: { 0.033 })
    }

    func frame(_ seq: UInt64, width: Int = 1920, height: Int = 1080, source: SourceUnit? = nil) -> Frame {
        Frame(seq: seq, capturedAt: 1, capturedNanos: 0, image: Self.picture(width: width, height: height), sourceUnit: source)
    }

    @Test func withNobodyTakingJPEGThePipelineEncodesNothing() throws {
        let stats = PipelineStats()
        let stream = StreamSink(stats: stats)
        let pipeline = try pipeline([stream], stats: stats)
        for seq in UInt64(1)...3 { pipeline.handle(frame(seq)) }
        let latest = try #require(stream.slot.latest)
        #expect(latest.send(.stream) == nil && latest.send(.full) == nil)
        #expect(latest.width == 1920 && latest.height == 1080)
        #expect(stats.snapshot().processed == 3)
        #expect(stats.snapshot().stages[.encode]?.count == 0)
        let processed = try pipeline.process(frame(4))
        #expect(processed.stageSeconds[.encode] == nil && processed.jpeg.made(.stream) == nil)
    }

    @Test func aViewersSizeIsMadeOnThePipelineThreadWithItsOwnJSON() throws {
        let stats = PipelineStats()
        let stream = StreamSink(stats: stats)
        let pipeline = try pipeline([stream], stats: stats)
        stream.slot.viewers.change(.stream, by: 1)
        pipeline.handle(frame(1))
        var latest = try #require(stream.slot.latest)
        let scaled = try #require(latest.send(.stream))
        #expect(try Self.size(scaled.jpeg) == (1280, 720) && latest.send(.full) == nil)
        let json = try JSONSerialization.jsonObject(with: scaled.json) as! [String: Any]
        // The JSON tells the full picture's size (boxes are normalized) and this JPEG's length.
        #expect(json["width"] as? Int == 1920 && json["height"] as? Int == 1080)
        #expect(json["jpegBytes"] as? Int == scaled.jpeg.count)
        #expect(stats.snapshot().stages[.encode]?.count == 1)

        // A full-size viewer too: both are made, each with its own JSON.
        stream.slot.viewers.change(.full, by: 1)
        pipeline.handle(frame(2))
        latest = try #require(stream.slot.latest)
        let full = try #require(latest.send(.full))
        #expect(try Self.size(full.jpeg) == (1920, 1080))
        let fullJSON = try JSONSerialization.jsonObject(with: full.json) as! [String: Any]
        #expect(fullJSON["jpegBytes"] as? Int == full.jpeg.count && latest.send(.stream) != nil)
        #expect(stats.snapshot().stages[.encode]?.count == 3)

        // Everyone left: nothing more is encoded.
        stream.slot.viewers.change(.stream, by: -1)
        stream.slot.viewers.change(.full, by: -1)
        pipeline.handle(frame(3))
        #expect(stream.slot.latest?.send(.stream) == nil && stats.snapshot().stages[.encode]?.count == 3)
    }

    @Test func anMJPEGSourcesFramesReachViewersWithoutAnEncode() throws {
        let stats = PipelineStats()
        let stream = StreamSink(stats: stats)
        let pipeline = try pipeline([stream], stats: stats)
        stream.slot.viewers.change(.stream, by: 1)
        stream.slot.viewers.change(.full, by: 1)
        let own = try JPEGEncoder(quality: 70).encode(Self.picture(width: 1920, height: 1080))
        pipeline.handle(frame(1, source: SourceUnit(codec: .mjpeg, data: own, isKeyframe: true)))
        let latest = try #require(stream.slot.latest)
        #expect(latest.send(.stream)?.jpeg == own && latest.send(.full)?.jpeg == own)
        let json = try JSONSerialization.jsonObject(with: try #require(latest.send(.stream)).json) as! [String: Any]
        #expect(json["jpegBytes"] as? Int == own.count)
        #expect(stats.snapshot().stages[.encode]?.count == 0)
    }

    @Test func anEventsSnapshotIsTheFullPictureMadeWhenAsked() throws {
        let encodes = Encodes()
        let jpeg = FrameJPEG(image: Self.picture(width: 1920, height: 1080), rule: JPEGSizeRule(maxWidth: 1280),
                             encoded: encodes.report)
        let frame = ProcessedFrame(seq: 1, capturedAt: 1_800_000_000, capturedNanos: 1_000_000_000, width: 1920, height: 1080,
                                   jpeg: jpeg, detections: [TrackerFrames.logo()])
        var options = EventTracker.Options()
        options.minSeconds = 0
        var tracker = EventTracker(options: options)
        let batch = tracker.observe(frame)
        let change = try #require(batch.changes.first)
        #expect(change.type == .new && change.bestChanged && encodes.value == 0)
        #expect(try Self.size(try #require(change.bestJPEG)) == (1920, 1080))
        #expect(change.bestJPEG != nil && encodes.value == 1, "made once for every consumer")
    }
}
