import ArgumentParser
import Foundation
import Logging
import SightlineCore
import SightlineVision
import SightlineSupport
import SightlinePipeline
import SightlineHTTP

struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Per-stage timings of the graph `serve` would run, as JSON (the performance figures).",
        discussion: """
        Takes serve's flags and config: the camera is built by the same assembly, faces included when \
        they are on. Without --source it runs the demo scene at --size and --fps. With --h264 VIDEO it \
        compares the H.264 encoder with the JPEG one on up to --frames frames of the video instead: \
        bytes per frame, luma SSIM against the frame, encode time.
        """
    )

    @OptionGroup var options: SettingsOptions

    @Option(help: "Frame size WxH (the demo scene without --source; --faces fits its input into it).")
    var size = "640x480"

    @Option(help: "Frames timed stage by stage.")
    var frames = 300

    @Option(help: "Seconds of a live run (capture loop + pipeline at the source's fps); 0 skips it.")
    var liveSeconds = 10.0

    @Option(help: "Frame rate of the demo scene without --source.")
    var fps = 30.0

    @Option(help: "Matcher: the frame is shrunk by this for the coarse search.")
    var frameScale: Double?

    @Option(help: "Matcher: level (fraction of the frame) where hits are refined; 0 turns refinement off.")
    var refineScale: Double?

    @Option(help: ArgumentHelp("Time the face detectors instead, on this photo or video (fitted into --size).",
                               valueName: "file"))
    var faces: String?

    @Option(help: ArgumentHelp("Compare H.264 with JPEG at --quality on this video instead: bytes per frame, "
                               + "luma SSIM, encode time.", valueName: "video"))
    var h264: String?

    @Option(help: "--h264: x264 preset (default: the encoder's).")
    var preset: String?

    @Option(help: "--h264: x264 tune, which must include zerolatency (default: the encoder's).")
    var tune: String?

    @Option(help: "--h264: more x264 options, key=value:key=value (x264's --x264-params).")
    var x264Params: String?

    @Option(help: "--h264: seconds between keyframes (default: the encoder's).")
    var keyframeSeconds: Double?

    @Option(help: "--h264: x264 constant quality, 0-51 (default: the encoder's).")
    var crf: Int?

    @Option(help: "--h264: average bitrate in kbit/s instead of constant quality.")
    var bitrate: Int?

    @Option(help: "--h264: scale frames to WxH first (default: the video's own size, as serve sends it).")
    var videoSize: String?

    @Option(help: ArgumentHelp("--h264: also write the access units, SEI included, to this Annex B file.",
                               valueName: "file"))
    var writeH264: String?

    func run() throws {
        let parts = size.split(separator: "x").compactMap { Int($0) }
        guard parts.count == 2 else { throw ValidationError("--size must be WxH") }
        var settings = try options.resolveSettings()
        OpenCVThreads.set(settings.opencvThreads)
        if let h264 {
            try printJSON(try videoBenchmark(h264, jpegQuality: settings.jpegQuality).run())
            return
        }
        if let faces {
            let report = try FaceBenchmark(inputPath: faces, width: parts[0], height: parts[1], frames: frames,
                                           modelPath: settings.faceModel,
                                           runtime: settings.yunetRuntime).run()
            try printJSON(report)
            return
        }
        if options.source == nil { settings.source = "demo?size=\(parts[0])x\(parts[1])&fps=\(fps)" }
        if let frameScale { settings.frameScale = frameScale }
        if let refineScale { settings.refineScale = refineScale > 0 ? refineScale : nil }
        settings.logLevel = options.logLevel ?? "warning"
        let logger = try LogSetup.bootstrap(level: settings.logLevel)
        try printJSON(try PipelineBenchmark(settings: settings, logger: logger).run(frames: frames, liveSeconds: liveSeconds))
    }

    private func videoBenchmark(_ path: String, jpegQuality: Int) throws -> VideoBenchmark {
        var encoder = H264Encoder.Settings()
        if let preset { encoder.preset = preset }
        if let tune { encoder.tune = tune }
        if let x264Params { encoder.x264Params = x264Params }
        if let keyframeSeconds { encoder.keyframeSeconds = keyframeSeconds }
        if let crf { encoder.crf = crf }
        if let bitrate { encoder.bitrateKbps = bitrate }
        var scaled: (width: Int, height: Int)?
        if let videoSize {
            let parts = videoSize.split(separator: "x").compactMap { Int($0) }
            guard parts.count == 2, parts.allSatisfy({ $0 > 0 }) else { throw ValidationError("--video-size must be WxH") }
            scaled = (parts[0], parts[1])
        }
        return VideoBenchmark(inputPath: path, frames: frames, settings: encoder, jpegQuality: jpegQuality,
                              size: scaled, writePath: writeH264)
    }

    private func printJSON(_ report: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        print(String(decoding: try encoder.encode(report), as: UTF8.self))
    }
}
