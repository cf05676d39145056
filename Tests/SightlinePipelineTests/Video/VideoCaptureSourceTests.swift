import Foundation
import Testing
@testable import SightlineSupport
@testable import SightlineVision
@testable import SightlinePipeline
import SightlineTesting

/// A video file or stream source through VideoReader (FFmpeg): its format,
/// looping at the end of a file, and the errors it gives.
@Suite struct VideoCaptureSourceTests {
    @Test(.enabled(if: FFmpegTools.installed, FFmpegTools.skipMessage))
    func vtestLoopsAtItsEndWithoutLosingOrRepeatingAFrame() throws {
        let path = VideoReaderTests.vtest
        try #require(FileManager.default.fileExists(atPath: path), "test data not found; set SIGHTLINE_TEST_DATA")
        let frames = try FFmpegTools.countFrames(path)
        let source = VideoCaptureSource(uri: path, kind: .file(pace: .max))
        let format = try source.open()
        defer { source.close() }
        #expect((format.width, format.height) == (768, 576))
        #expect(format.fps == 10)
        #expect(format.pixelFormat == "msmpeg4v3")
        #expect(source.frameCount == frames)
        #expect(source.name == "vtest.avi")

        // Frames 0 and 1, the last, then 0 and 1 again: the loop adds nothing
        // between the last frame and the first, and leaves none out.
        let first = try source.nextImage().image, second = try source.nextImage().image
        var last = second
        for _ in 2..<frames { last = try source.nextImage().image }
        let looped = try source.nextImage().image, loopedSecond = try source.nextImage().image
        func same(_ a: ImageBuffer, _ b: ImageBuffer) -> Bool {
            a.width == b.width && a.height == b.height && memcmp(a.bytes, b.bytes, a.byteCount) == 0
        }
        #expect(!same(first, second) && !same(last, first), "vtest's frames are not distinct enough for this test")
        #expect(same(looped, first), "the frame after the last is not the first")
        #expect(same(loopedSecond, second))
    }

    @Test(.enabled(if: FFmpegTools.installed, FFmpegTools.skipMessage))
    func aNewPictureSizeComesThroughAsItIsAndTheFirstAfterTheLoop() throws {
        let dir = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try FFmpegTools.makeSizeChangingVideo(in: dir)
        let frames = try FFmpegTools.countFrames(path)
        let source = VideoCaptureSource(uri: path, kind: .file(pace: .max))
        let format = try source.open()
        defer { source.close() }
        #expect((format.width, format.height) == (320, 240))
        #expect(format.pixelFormat == "mpeg2video")
        var sizes: [String] = []
        for _ in 0..<(frames + 3) {
            let image = try source.nextImage().image
            let size = "\(image.width)x\(image.height)"
            if sizes.last != size { sizes.append(size) }
        }
        #expect(sizes == ["320x240", "480x360", "320x240"])
    }

    @Test func aMissingFileIsCannotOpenWithItsPath() {
        let path = NSTemporaryDirectory() + "sightline-missing-\(UUID().uuidString).avi"
        let source = VideoCaptureSource(uri: path, kind: .file(pace: .max))
        #expect(throws: SourceError.cannotOpen("no readable file at \(path)")) { try source.open() }
    }

    @Test func aFileOfGarbageIsCannotOpenWithFFmpegsReason() throws {
        let dir = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try VideoReaderTests.writeGarbage(in: dir)
        let source = VideoCaptureSource(uri: path, kind: .file(pace: .max))
        let error = try #require(throws: SourceError.self) { try source.open() }
        guard case .cannotOpen(let why) = error else {
            Issue.record("expected cannotOpen, got \(error)")
            return
        }
        #expect(why.hasPrefix(path + ": "), "\(why)")
        #expect(why.contains("Invalid data found when processing input"), "\(why)")
    }

    @Test func aStreamThatNeverAnswersIsCannotOpen() throws {
        let listener = try SilentListener()
        let url = "rtsp://127.0.0.1:\(listener.port)/cam"
        let source = VideoCaptureSource(uri: url, kind: .stream)
        let start = MonotonicClock.nanos()
        let error = try #require(throws: SourceError.self) { try source.open() }
        let seconds = Double(MonotonicClock.nanos() - start) / 1e9
        guard case .cannotOpen(let why) = error else {
            Issue.record("expected cannotOpen, got \(error)")
            return
        }
        #expect(why.hasPrefix(url + ": ") && why.contains("no answer in 5000 ms"), "\(why)")
        // It waited out its 5 s (how much longer depends on the machine, so that is not bounded).
        #expect(seconds > 4, "gave up after \(seconds) s")
    }

    @Test func aStreamUrlNamesOnlyItsHost() {
        let source = VideoCaptureSource(uri: "rtsp://user:pw@10.0.0.5:8554/cam", kind: .stream)
        #expect(source.name == "rtsp://10.0.0.5:8554")
        #expect(source.frameCount == nil)
    }
}
