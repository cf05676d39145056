import ArgumentParser
import Foundation
import Logging
import SightlineCore

struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Per-stage timings of the graph `serve` would run, as JSON (the performance figures).",
        discussion: """
        Takes serve's flags and config: the camera is built by the same assembly, faces included when \
        they are on. Without --source it runs the demo scene at --size and --fps.
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

    func run() throws {
        let parts = size.split(separator: "x").compactMap { Int($0) }
        guard parts.count == 2 else { throw ValidationError("--size must be WxH") }
        var settings = try options.resolveSettings()
        OpenCVThreads.set(settings.opencvThreads)
        if let faces {
            let report = try FaceBenchmark(inputPath: faces, width: parts[0], height: parts[1], frames: frames,
                                           modelPath: settings.faceModel).run()
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

    private func printJSON(_ report: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        print(String(decoding: try encoder.encode(report), as: UTF8.self))
    }
}
