import CTurboJPEG
import Foundation
import Testing
@testable import SightlineSupport
@testable import SightlineVision
@testable import SightlinePipeline
import SightlineTesting

/// An MJPEG file's or stream's JPEGs are read as they are (`sl_av_reader_read_packet`)
/// and decoded by TurboJPEG only when and at the size asked for (`JPEGPicture`);
/// JPEGs TurboJPEG cannot decode to BGR go through libavcodec as before.
@Suite struct JPEGPictureTests {
    /// Six 1280x720 frames of FFmpeg's moving test pattern, MJPEG in AVI (4:2:0, as cameras send).
    private func makeMJPEG(in dir: String) throws -> String {
        let path = dir + "/pattern.avi"
        try FFmpegTools.run(FFmpegTools.ffmpeg, ["-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=25", "-frames:v", "6",
                                                 "-c:v", "mjpeg", "-pix_fmt", "yuvj420p", "-q:v", "3", path])
        return path
    }

    @Test(.enabled(if: FFmpegTools.installed, FFmpegTools.skipMessage))
    func mjpegFramesAreTheirJPEGsDecodedWhenAskedAsLibavcodecDecodesThem() throws {
        let dir = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try makeMJPEG(in: dir)
        let source = VideoCaptureSource(uri: path, kind: .file(pace: .max))
        let format = try source.open()
        defer { source.close() }
        #expect((format.width, format.height) == (1280, 720))
        #expect(format.passedOn == .mjpeg)
        let reference = try VideoReader(url: path, live: false)
        var references: [ImageBuffer] = []
        while let image = try reference.read() { references.append(image) }
        #expect(references.count == 6)

        // Six frames and two more after the loop: the first two again.
        for index in 0..<8 {
            let captured = try source.nextImage()
            let expected = references[index % 6]
            let jpeg = try #require(captured.sourceUnit?.data, "frame \(index) has no JPEG to pass on")
            #expect(jpeg.starts(with: [0xFF, 0xD8]))
            #expect(!captured.picture.isConverted, "reading a frame must not decode it")
            // The detection-size copy, made without the full picture (TurboJPEG
            // decodes at 1/2, then it is scaled the rest of the way).
            let copy = try AnalysisSize(longSide: 640).analysed(captured.picture)
            #expect(copy.width == 640 && copy.height == 360)
            #expect(!captured.picture.isConverted, "the analysed copy must not make the full picture")
            let scaledReference = try ImageOps.scaledDown(expected, width: 640, height: 360)
            let copyDifference = meanDifference(copy, scaledReference)
            #expect(copyDifference < 3, "frame \(index): the copy differs by \(copyDifference) levels")
            // The full picture: TurboJPEG's fast IDCT and upsampling against
            // libavcodec's, a level or two apart, not a different picture.
            let full = captured.picture.image
            #expect(full.width == 1280 && full.height == 720)
            let difference = meanDifference(full, expected)
            #expect(difference < 2, "frame \(index): the decoded frame differs by \(difference) levels")
            let other = references[(index + 3) % 6]
            #expect(meanDifference(full, other) > difference + 1, "frame \(index) reads as another frame")
        }
    }

    @Test(.enabled(if: FFmpegTools.installed, FFmpegTools.skipMessage))
    func withoutPassingOnTheJPEGsAreStillDecodedByTurboJPEGAndNothingGoesOn() throws {
        let dir = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try makeMJPEG(in: dir)
        let source = VideoCaptureSource(uri: path, kind: .file(pace: .max), passOn: false)
        let format = try source.open()
        defer { source.close() }
        #expect(format.passedOn == nil)
        let reference = try VideoReader(url: path, live: false)
        let captured = try source.nextImage()
        #expect(captured.sourceUnit == nil, "video.passThrough off: no JPEG goes on as it came")
        let copy = try AnalysisSize(longSide: 640).analysed(captured.picture)
        #expect(!captured.picture.isConverted, "a JPEG picture: the copy is made at an IDCT scale")
        let expected = try ImageOps.scaledDown(try #require(try reference.read()), width: 640, height: 360)
        #expect(meanDifference(copy, expected) < 3)
    }

    @Test func aScaledDecodeTakesTheSmallestIDCTScaleStillLargeEnough() throws {
        let image = ImageBuffer(width: 1280, height: 720, channels: 3)
        for y in 0..<720 { for x in 0..<(1280 * 3) { image.bytes[y * image.stride + x] = UInt8((x / 3 + y) & 0xFF) } }
        let jpeg = try JPEGEncoder(quality: 90).encode(image)
        let decoder = try JPEGDecoder()
        let quarter = try decoder.decode(jpeg, atLeastWidth: 320, height: 180)
        #expect((quarter.width, quarter.height) == (320, 180))
        let justOver = try decoder.decode(jpeg, atLeastWidth: 321, height: 180)
        #expect((justOver.width, justOver.height) == (480, 270), "3/8 is the next scale up from 1/4")
        let full = try decoder.decode(jpeg, atLeastWidth: 1280, height: 720)
        #expect((full.width, full.height) == (1280, 720))
        let picture = try JPEGPicture(jpeg: jpeg, headerBy: decoder)
        let copy = try picture.converted(width: 400, height: 225)
        #expect((copy.width, copy.height) == (400, 225))
        let reference = try ImageOps.scaledDown(try decoder.decode(jpeg), width: 400, height: 225)
        #expect(meanDifference(copy, reference) < 3)
        #expect(throws: JPEGError.self) { try JPEGPicture(jpeg: Data([0xFF, 0xD8, 0xFF, 0xE0, 1, 2]), headerBy: decoder) }
        // A header claiming 60000x40 (a hostile stream) is refused before any pixel is allocated.
        var huge = jpeg
        let sof = try #require((0..<(huge.count - 9)).first { huge[$0] == 0xFF && huge[$0 + 1] == 0xC0 })
        huge[sof + 7] = UInt8(60000 >> 8)
        huge[sof + 8] = UInt8(60000 & 0xFF)
        #expect(try decoder.size(of: huge) == (60000, 720))
        #expect(throws: JPEGError.self) { try JPEGPicture(jpeg: huge, headerBy: decoder) }
    }

    @Test(.enabled(if: FFmpegTools.installed, FFmpegTools.skipMessage))
    func damagedJPEGsAreReadAsFarAsTheyGoAndOnesWithoutAHeaderAreSkipped() throws {
        let dir = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FFmpegTools.run(FFmpegTools.ffmpeg, ["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-frames:v", "6",
                                                 "-q:v", "3", dir + "/f%d.jpg"])
        func url(_ index: Int) -> URL { URL(fileURLWithPath: dir + "/f\(index + 1).jpg") }
        // Frame 2: its entropy-coded data scrambled past the headers; frame 3: cut
        // off halfway (a camera's lost packets); frame 4: no JPEG at all.
        var scrambled = try Data(contentsOf: url(2))
        let sos = try #require((0..<(scrambled.count - 1)).first { scrambled[$0] == 0xFF && scrambled[$0 + 1] == 0xDA })
        for i in stride(from: sos + 40, to: scrambled.count - 2, by: 7) { scrambled[i] = UInt8(truncatingIfNeeded: i &* 31) }
        try scrambled.write(to: url(2))
        let whole = try Data(contentsOf: url(3))
        try whole.prefix(whole.count / 2).write(to: url(3))
        try Data(repeating: 0x5A, count: 3000).write(to: url(4))
        let path = dir + "/damaged.avi"
        try FFmpegTools.run(FFmpegTools.ffmpeg, ["-f", "image2", "-framerate", "25", "-start_number", "1",
                                                 "-i", dir + "/f%d.jpg", "-c:v", "copy", path])
        let source = VideoCaptureSource(uri: path, kind: .file(pace: .max))
        #expect(try source.open().passedOn == .mjpeg)
        defer { source.close() }
        var sizes: [String] = []
        var units: [Int] = []
        for _ in 0..<5 {
            let captured = try source.nextImage()
            let image = try AnalysisSize(longSide: 640).analysed(captured.picture)
            sizes.append("\(image.width)x\(image.height)")
            units.append(captured.sourceUnit?.data.count ?? 0)
        }
        #expect(sizes == Array(repeating: "320x240", count: 5))
        // Frames 0-3 and 5: the one without a header was skipped, and the next one is frame 5.
        let expected = [0, 1, 2, 3, 5].map { (try? Data(contentsOf: url($0)).count) ?? -1 }
        #expect(units == expected)
        // The loop starts again at frame 0.
        #expect(try source.nextImage().sourceUnit?.data.count == expected[0])
    }

    /// A JPEG in CMYK (as Adobe software writes): libavcodec decodes it,
    /// TurboJPEG decodes it only to CMYK, never to BGR.
    private func cmykJPEG(width: Int, height: Int, seed: Int) throws -> Data {
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        for i in 0..<pixels.count { pixels[i] = UInt8((i * 7 + seed * 31 + (i / (width * 4)) * 3) & 0xFF) }
        let handle = try #require(tjInitCompress())
        defer { tjDestroy(handle) }
        var buffer: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        let status = tjCompress2(handle, pixels, Int32(width), 0, Int32(height), Int32(TJPF_CMYK.rawValue),
                                 &buffer, &size, Int32(TJSAMP_444.rawValue), 90, 0)
        defer { if let buffer { tjFree(buffer) } }
        try #require(status == 0, "TurboJPEG could not write a CMYK JPEG")
        return Data(bytes: try #require(buffer), count: Int(size))
    }

    @Test(.enabled(if: FFmpegTools.installed, FFmpegTools.skipMessage))
    func jpegsTurboJPEGCannotDecodeGoThroughLibavcodec() throws {
        let dir = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for index in 0..<3 {
            try cmykJPEG(width: 160, height: 120, seed: index).write(to: URL(fileURLWithPath: dir + "/f\(index).jpg"))
        }
        let path = dir + "/cmyk.avi"
        try FFmpegTools.run(FFmpegTools.ffmpeg, ["-f", "image2", "-i", dir + "/f%d.jpg", "-c:v", "copy", path])
        let direct = try VideoReader(url: path, live: false, keepUnits: true, jpegsByTurboJPEG: true)
        #expect(direct.readsJPEGs)
        #expect(throws: VideoReader.JPEGsRefused.self) { try direct.readPicture() }

        let source = VideoCaptureSource(uri: path, kind: .file(pace: .max))
        let format = try source.open()
        defer { source.close() }
        #expect((format.width, format.height) == (160, 120))
        let reference = try VideoReader(url: path, live: false)
        for index in 0..<3 {
            let image = try source.nextImage().image
            let expected = try #require(try reference.read())
            #expect(image.width == expected.width && image.height == expected.height)
            #expect(memcmp(image.bytes, expected.bytes, image.byteCount) == 0,
                    "frame \(index) is not libavcodec's decode")
        }
    }
}
