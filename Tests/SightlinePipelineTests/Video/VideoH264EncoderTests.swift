import Foundation
import Testing
@testable import SightlineVision
@testable import SightlinePipeline
import SightlineTesting


@Suite("Video: H.264 encoder")
struct VideoH264EncoderTests {
    static let forced: Set<Int> = [17, 40]

    static func boxes(_ index: Int) -> SEIBoxes.Payload {
        SEIBoxes.Payload(seq: UInt64(index + 1), capturedAt: 1_763_802_000 + Double(index) / 30, width: 640, height: 480,
                         detections: [Detection.template(label: "square", score: 0.9, scale: 1, angle: 0,
                                                         box: NormalizedBox(x: Double(40 + index * 7) / 640,
                                                                            y: Double(60 + index * 3) / 480,
                                                                            w: 120.0 / 640, h: 120.0 / 480))])
    }

    @Test("60 frames at 640x480: keyframes with SPS+PPS+IDR, one SEI before the first slice, decodable")
    func sixtyFrames() throws {
        let encoder = try H264Encoder(width: 640, height: 480, fps: 30)
        #expect(encoder.keyframeInterval == 60)
        let decoder = try H264Decoder()
        var keyframes: [Int] = []
        for index in 0..<60 {
            let image = MovingScene.frame(index)
            let encoded = try encoder.encode(image, forceKeyframe: Self.forced.contains(index))
            let boxes = Self.boxes(index)
            let unit = try VideoAccessUnit(encoded: encoded, boxes: boxes)
            let types = AnnexB.units(in: unit.data).map(\.type)
            let firstSlice = try #require(types.firstIndex(where: AnnexB.UnitType.isVCL), "frame \(index) has no slice")

            if encoded.isKeyframe {
                keyframes.append(index)
                // SPS, then PPS, before the slices; every slice an IDR.
                let sps = try #require(types.firstIndex(of: AnnexB.UnitType.sps))
                let pps = try #require(types.firstIndex(of: AnnexB.UnitType.pps))
                #expect(sps < pps && pps < firstSlice)
                #expect(types[firstSlice...].allSatisfy { !AnnexB.UnitType.isVCL($0) || $0 == AnnexB.UnitType.idr })
                // The codec string is the SPS's profile, constraints and level.
                let spsUnit = AnnexB.units(in: unit.data)[sps].bytes(in: unit.data)
                let head = Array(spsUnit.prefix(4))
                #expect(head[1] == 100, "profile High")
                #expect(unit.codec == String(format: "avc1.%02x%02x%02x", head[1], head[2], head[3]))
                #expect(unit.info.codec == unit.codec && unit.info.key)
            } else {
                #expect(!types.contains(AnnexB.UnitType.idr) && !types.contains(AnnexB.UnitType.sps))
                #expect(unit.codec == nil && unit.info.codec == nil)
            }
            #expect(unit.info.bytes == unit.data.count && unit.info.format == "h264")

            // Exactly one Sightline SEI, before the first slice, with the frame's JSON.
            let units = AnnexB.units(in: unit.data)
            let ours = units.enumerated().filter { _, nal in
                nal.type == AnnexB.UnitType.sei && SEIBoxes.userData(inSEI: nal.bytes(in: unit.data)) != nil
            }
            #expect(ours.count == 1)
            #expect(ours.first.map { $0.offset == firstSlice - 1 } == true)
            let json = try #require(SEIBoxes.userData(in: unit.data))
            #expect(NSDictionary(dictionary: try JSONSerialization.jsonObject(with: json) as! [String: Any])
                .isEqual(to: try JSONSerialization.jsonObject(with: boxes.jsonData()) as! [String: Any]))
            #expect(try SEIBoxes.payload(in: unit.data) == boxes)

            // A real decoder takes every access unit, SEI and all, and gives back the picture.
            let picture = try #require(try decoder.decode(unit.data), "frame \(index) did not decode")
            #expect(picture.width == 640 && picture.height == 480)
            if index % 15 == 0 || Self.forced.contains(index) {
                #expect(try ImageOps.ssim(image, picture) > 0.9)
            }
        }
        #expect(keyframes == [0] + Self.forced.sorted(), "keyframes at \(keyframes)")
    }

    @Test("the first frame is an IDR even unasked, and the interval brings the next")
    func keyframeInterval() throws {
        var settings = H264Encoder.Settings()
        settings.keyframeSeconds = 1
        let encoder = try H264Encoder(width: 320, height: 240, fps: 10, settings: settings)
        #expect(encoder.keyframeInterval == 10)
        var keyframes: [Int] = []
        for index in 0..<25 where try encoder.encode(MovingScene.frame(index, width: 320, height: 240)).isKeyframe {
            keyframes.append(index)
        }
        #expect(keyframes == [0, 10, 20])
    }

    @Test("an odd frame size is encoded without its last column and row")
    func oddSize() throws {
        let encoder = try H264Encoder(width: 321, height: 241, fps: 25)
        #expect(encoder.width == 320 && encoder.height == 240)
        let unit = try encoder.encode(MovingScene.frame(0, width: 321, height: 241))
        let picture = try #require(try H264Decoder().decode(unit.data))
        #expect(picture.width == 320 && picture.height == 240)
    }

    @Test("gray and BGRX frames are encoded too")
    func otherChannels() throws {
        for channels in [1, 4] {
            let image = ImageBuffer(width: 64, height: 48, channels: channels)
            for i in 0..<image.byteCount { image.bytes[i] = UInt8(i % 251) }
            let encoder = try H264Encoder(width: 64, height: 48, fps: 30)
            #expect(try encoder.encode(image).isKeyframe)
        }
    }

    @Test("refuses what would break the one-frame-in, one-access-unit-out promise or the size")
    func refusals() throws {
        var settings = H264Encoder.Settings()
        settings.tune = "film"
        #expect(throws: AVError.self) { try H264Encoder(width: 64, height: 48, fps: 30, settings: settings) }
        settings = H264Encoder.Settings()
        settings.preset = "no-such-preset"
        #expect(throws: AVError.self) { try H264Encoder(width: 64, height: 48, fps: 30, settings: settings) }
        let encoder = try H264Encoder(width: 64, height: 48, fps: 30)
        #expect(throws: AVError.self) { try encoder.encode(ImageBuffer(width: 32, height: 48)) }
        #expect(throws: AVError.self) { try H264Decoder().decode(Data()) }
        #expect(H264Encoder.rational(30) == (30, 1) && H264Encoder.rational(29.97) == (30000, 1001))
        #expect(H264Encoder.rational(12.5) == (12500, 1000))
    }

    @Test("a bitrate instead of constant quality lands near it")
    func bitrate() throws {
        var settings = H264Encoder.Settings()
        settings.bitrateKbps = 300
        let encoder = try H264Encoder(width: 320, height: 240, fps: 10, settings: settings)
        var bytes = 0
        for index in 0..<40 { bytes += try encoder.encode(MovingScene.frame(index, width: 320, height: 240)).data.count }
        let kbps = Double(bytes * 8) / 4 / 1000
        #expect(kbps > 100 && kbps < 600, "\(kbps) kbit/s")
    }

    @Test("an access unit without a slice, or a keyframe without SPS, is refused")
    func malformed() throws {
        let boxes = Self.boxes(0)
        #expect(throws: VideoAccessUnit.Malformed.self) {
            try VideoAccessUnit(encoded: EncodedVideo(data: Data([0, 0, 0, 1, 0x67, 0x64, 0, 0x1e]), isKeyframe: true), boxes: boxes)
        }
        #expect(throws: VideoAccessUnit.Malformed.self) {
            try VideoAccessUnit(encoded: EncodedVideo(data: Data([0, 0, 0, 1, 0x65, 0x88]), isKeyframe: true), boxes: boxes)
        }
    }

    @Test("the pipeline hands sinks the frame's own pixels")
    func processedFrameCarriesTheImage() throws {
        let pipeline = Pipeline(mailbox: FrameMailbox(), stats: PipelineStats(), stages: [], encoder: try JPEGEncoder(),
                                sinks: [], logger: quietLogger(), budgetSeconds: { 0.033 })
        let image = MovingScene.frame(0, width: 64, height: 48)
        let processed = try pipeline.process(Frame(seq: 1, capturedAt: 1, capturedNanos: 0, image: image))
        #expect(processed.image === image)
    }
}
