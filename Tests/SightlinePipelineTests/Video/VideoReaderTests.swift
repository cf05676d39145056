import Foundation
import Testing
@testable import SightlineSupport
@testable import SightlineVision
@testable import SightlinePipeline
import SightlineTesting

/// Debian's ffmpeg and ffprobe, to make videos and count their frames. Tests
/// that need them are enabled only when they are installed, so a machine
/// without them reports those skipped, never passed.
enum FFmpegTools {
    static let ffmpeg = find("ffmpeg")
    static let ffprobe = find("ffprobe")
    static var installed: Bool { ffmpeg != nil && ffprobe != nil }
    static let skipMessage: Comment = "ffmpeg is not installed (apt-get install ffmpeg; scripts/setup.sh --tests does)"

    private static func find(_ name: String) -> String? {
        ["/usr/bin/", "/usr/local/bin/"].map { $0 + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Runs the tool and gives its standard output; throws on a non-zero exit.
    @discardableResult
    static func run(_ tool: String?, _ arguments: [String]) throws -> String {
        let tool = try #require(tool, skipMessage)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = ["-hide_banner", "-v", "error"] + arguments
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0,
                     "\(tool) \(arguments.joined(separator: " ")): \(String(decoding: err, as: UTF8.self))")
        return String(decoding: out, as: UTF8.self)
    }

    /// Two MPEG-2 pieces in MPEG-TS, 25 frames at 320x240 then 25 at 480x360,
    /// one after the other in `dir`/sizes.ts.
    static func makeSizeChangingVideo(in dir: String) throws -> String {
        for (name, size) in [("a", "320x240"), ("b", "480x360")] {
            try run(ffmpeg, ["-f", "lavfi", "-i", "testsrc2=size=\(size):rate=25", "-frames:v", "25",
                             "-c:v", "mpeg2video", dir + "/\(name).ts"])
        }
        let path = dir + "/sizes.ts"
        var joined = try Data(contentsOf: URL(fileURLWithPath: dir + "/a.ts"))
        joined.append(try Data(contentsOf: URL(fileURLWithPath: dir + "/b.ts")))
        try joined.write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The frames FFmpeg itself decodes from the file's first video stream
    /// (`ffprobe -count_frames`).
    static func countFrames(_ path: String) throws -> Int {
        let text = try run(ffprobe, ["-select_streams", "v:0", "-count_frames", "-show_entries",
                                     "stream=nb_read_frames", "-of", "csv=p=0", path])
        // One line for the stream (MPEG-TS adds another for its program).
        let counts = text.split(whereSeparator: \.isNewline).compactMap { Int($0.trimmingCharacters(in: [",", " "])) }
        return try #require(counts.first, "ffprobe said \(text)")
    }
}

@Suite struct VideoReaderTests {
    static var vtest: String { TestPaths.testData + "/video/vtest.avi" }

    private func requireVtest() throws -> String {
        try #require(FileManager.default.fileExists(atPath: Self.vtest),
                     "test data not found at \(TestPaths.testData); set SIGHTLINE_TEST_DATA")
        return Self.vtest
    }

    private func same(_ a: ImageBuffer, _ b: ImageBuffer) -> Bool {
        a.width == b.width && a.height == b.height && a.channels == b.channels
            && memcmp(a.bytes, b.bytes, a.byteCount) == 0
    }

    /// Reads to the end: the count, each size seen (in order) and the first picture.
    private func readAll(_ reader: VideoReader) throws -> (count: Int, sizes: [String], first: ImageBuffer?) {
        var count = 0, sizes: [String] = [], first: ImageBuffer?
        while let image = try reader.read() {
            if first == nil { first = image }
            let size = "\(image.width)x\(image.height)"
            if sizes.last != size { sizes.append(size) }
            count += 1
        }
        return (count, sizes, first)
    }

    @Test(.enabled(if: FFmpegTools.installed, FFmpegTools.skipMessage))
    func readsEveryFrameOfVtestAndAgainAfterARewind() throws {
        let path = try requireVtest()
        let reader = try VideoReader(url: path, live: false)
        #expect(reader.info.codec == "msmpeg4v3")
        #expect(reader.info.fps == 10)
        #expect(reader.info.frameCount == 795)
        let expected = try FFmpegTools.countFrames(path)
        let pass = try readAll(reader)
        #expect(pass.count == expected, "ffprobe -count_frames says \(expected)")
        #expect(pass.sizes == ["768x576"])
        // The end stays the end until a rewind.
        #expect(try reader.read() == nil)
        try reader.rewind()
        let again = try readAll(reader)
        #expect(again.count == expected)
        let (first, firstAgain) = (try #require(pass.first), try #require(again.first))
        #expect(same(first, firstAgain), "the first picture after a rewind is not the first picture")
    }

    @Test(.enabled(if: FFmpegTools.installed, FFmpegTools.skipMessage))
    func aDecoderHoldingPicturesBackGivesThemAllAtTheEnd() throws {
        // libx264's default B-frames, decoded with frame threads: at the end of
        // the file the decoder still holds pictures, which draining gives.
        let dir = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/bframes.mp4"
        try FFmpegTools.run(FFmpegTools.ffmpeg, ["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-frames:v", "37",
                                                 "-c:v", "libx264", "-bf", "3", "-pix_fmt", "yuv420p", path])
        let reader = try VideoReader(url: path, live: false, threads: 2)
        #expect(reader.info.codec == "h264")
        #expect(try readAll(reader).count == 37)
        #expect(try FFmpegTools.countFrames(path) == 37)
    }

    @Test(.enabled(if: FFmpegTools.installed, FFmpegTools.skipMessage))
    func picturesChangingSizeMidStreamComeOutAtTheirOwnSize() throws {
        let dir = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try FFmpegTools.makeSizeChangingVideo(in: dir)
        let reader = try VideoReader(url: path, live: false)
        #expect(reader.info.codec == "mpeg2video")
        let pass = try readAll(reader)
        #expect(pass.sizes == ["320x240", "480x360"])
        #expect(pass.count == (try FFmpegTools.countFrames(path)))
        // MPEG-TS rewinds by bytes: the first picture again, at its size.
        try reader.rewind()
        #expect(try reader.read().map { "\($0.width)x\($0.height)" } == "320x240")
    }

    @Test func aMissingFileIsACleanError() throws {
        let path = NSTemporaryDirectory() + "sightline-missing-\(UUID().uuidString).avi"
        let error = try #require(throws: AVError.self) { try VideoReader(url: path, live: false) }
        #expect(error.description.contains("opening the input: No such file or directory"), "\(error)")
    }

    @Test func aFileOfGarbageIsACleanError() throws {
        let dir = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try Self.writeGarbage(in: dir)
        let error = try #require(throws: AVError.self) { try VideoReader(url: path, live: false) }
        #expect(error.description.contains("Invalid data found when processing input"), "\(error)")
    }

    /// 64 KiB of seeded random bytes named like a video, `dir`/garbage.avi.
    static func writeGarbage(in dir: String) throws -> String {
        let path = dir + "/garbage.avi"
        var rng = SplitMix64(seed: 7)
        try Data((0..<65536).map { _ in UInt8.random(in: 0...255, using: &rng) }).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func aStreamThatNeverAnswersTimesOut() throws {
        let listener = try SilentListener()
        for url in ["http://127.0.0.1:\(listener.port)/stream.mjpg", "rtsp://127.0.0.1:\(listener.port)/cam"] {
            let start = MonotonicClock.nanos()
            let error = try #require(throws: AVError.self) { try VideoReader(url: url, live: true, timeout: 0.5) }
            let seconds = Double(MonotonicClock.nanos() - start) / 1e9
            #expect(error.code == AVError.timedOut, "\(url): \(error)")
            // It gave up on its own timeout, not on an error, and not before it: how much later
            // depends on the machine, so that is not bounded.
            #expect(seconds >= 0.4, "\(url): gave up after \(seconds) s")
        }
    }
}

/// A loopback socket that listens and never speaks: the kernel completes a
/// client's connection, and then nothing comes.
final class SilentListener {
    let port: Int
    private let fd: Int32

    init() throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let fd = self.fd
        let listening = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 8) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard listening else {
            close(fd)
            throw POSIXError(.EADDRNOTAVAIL)
        }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(fd) }
}
