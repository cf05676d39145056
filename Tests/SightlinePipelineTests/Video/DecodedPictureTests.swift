import Foundation
import Testing
@testable import SightlineSupport
@testable import SightlineVision
@testable import SightlinePipeline
import SightlineTesting

/// A decoded picture's BGR pixels are made only when asked for (`FramePicture`,
/// `DecodedPicture`): at full size exactly as the reader converted every
/// frame before, and at a smaller size straight from the decoded YUV.
@Suite struct DecodedPictureTests {
    /// Five 1280x720 H.264 frames of FFmpeg's moving test pattern (4:2:0, as cameras send).
    private func makeVideo() throws -> (path: String, dir: String) {
        let dir = try TestPaths.temporaryDirectory()
        let path = dir + "/pattern.mp4"
        try FFmpegTools.run(FFmpegTools.ffmpeg, ["-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=25", "-frames:v", "5",
                                                 "-c:v", "libx264", "-pix_fmt", "yuv420p", "-bf", "0", path])
        return (path, dir)
    }

    @Test(.enabled(if: FFmpegTools.installed, FFmpegTools.skipMessage))
    func theFullPictureIsMadeOnceWhenAskedAndIsTheReadersOwnConversion() throws {
        let (path, dir) = try makeVideo()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let lazy = try VideoReader(url: path, live: false)
        let eager = try VideoReader(url: path, live: false)
        var frames = 0
        while let picture = try lazy.readPicture()?.picture {
            let converted = try #require(try eager.read())
            #expect(picture.width == 1280 && picture.height == 720)
            #expect(!picture.isConverted, "reading a frame must not convert it")
            let image = picture.image
            #expect(picture.isConverted)
            #expect(image === picture.image, "a second caller shares the first one's pixels")
            #expect(image.width == converted.width && image.height == converted.height)
            #expect(memcmp(image.bytes, converted.bytes, image.byteCount) == 0,
                    "frame \(frames): the lazy conversion differs from the reader's own")
            #expect(try picture.scaledFromSource(width: 640, height: 360) == nil,
                    "once converted, smaller copies come from the BGR pixels")
            frames += 1
        }
        #expect(frames == 5)
    }

    @Test(.enabled(if: FFmpegTools.installed, FFmpegTools.skipMessage))
    func theDetectionSizeCopyComesStraightFromTheDecodedPicture() throws {
        let (path, dir) = try makeVideo()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let lazy = try VideoReader(url: path, live: false)
        let eager = try VideoReader(url: path, live: false)
        let picture = try #require(try lazy.readPicture()?.picture)
        let full = try #require(try eager.read())
        let copy = try AnalysisSize(longSide: 640).analysed(picture)
        #expect(copy.width == 640 && copy.height == 360)
        #expect(!picture.isConverted, "the analysed copy must not make the full picture")
        // The same picture scaled from its full BGR (area halving, then linear):
        // both filters average what each copy pixel covers, so they differ by
        // a few levels at edges of the test pattern, not by picture content.
        let reference = try ImageOps.scaledDown(full, width: 640, height: 360)
        let difference = meanDifference(copy, reference)
        #expect(difference < 4, "mean difference \(difference) levels")
        // A picture that is not the same one differs by far more: the check can fail.
        let other = try #require(try eager.read())
        #expect(meanDifference(copy, try ImageOps.scaledDown(other, width: 640, height: 360)) > difference)
    }

    @Test(.enabled(if: FFmpegTools.installed, FFmpegTools.skipMessage))
    func aSmallerJPEGIsMadeWithoutTheFullPictureAndTheFullOneWithIt() throws {
        let (path, dir) = try makeVideo()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let reader = try VideoReader(url: path, live: false)
        let picture = try #require(try reader.readPicture()?.picture)
        let jpeg = FrameJPEG(picture: picture, rule: JPEGSizeRule(maxWidth: 640))
        #expect(jpeg.dimensions(.stream)! == (640, 360))
        let small = try ImageIO.decode(try jpeg.make(.stream))
        #expect(small.width == 640 && small.height == 360)
        #expect(!picture.isConverted, "a 640 JPEG of a 1280 frame needs no full-size conversion")
        let large = try ImageIO.decode(try jpeg.make(.full))
        #expect(large.width == 1280 && large.height == 720)
        #expect(picture.isConverted)
    }
}
