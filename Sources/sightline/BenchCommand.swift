import ArgumentParser
import Foundation
import Logging
import SightlineCore

struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Per-stage timings on the demo scene, as JSON (the performance figures)."
    )

    @Option(help: "Frame size WxH.")
    var size = "640x480"

    @Option(help: "Frames timed stage by stage.")
    var frames = 300

    @Option(help: "Seconds of a live run (capture loop + pipeline at the demo's fps); 0 skips it.")
    var liveSeconds = 10.0

    @Option(help: "Frame rate of the live run.")
    var fps = 30.0

    @Option(help: "JPEG quality.")
    var quality = 80

    @Option(help: "Matcher: the frame is shrunk by this for the coarse search.")
    var frameScale = TemplateMatcher.Options().frameScale

    @Option(help: "Matcher: level (fraction of the frame) where hits are refined; 0 turns refinement off.")
    var refineScale = TemplateMatcher.Options().refineScale ?? 0

    @Option(help: "Demo template image.")
    var demoTemplate = "config/demo-template.png"

    @Option(help: ArgumentHelp("Time the face detectors instead, on this photo or video (fitted into --size).",
                               valueName: "file"))
    var faces: String?

    @Option(help: "YuNet model for --faces (also SIGHTLINE_FACE_MODEL); without one only Haar is timed.")
    var faceModel: String?

    func run() throws {
        let parts = size.split(separator: "x").compactMap { Int($0) }
        guard parts.count == 2 else { throw ValidationError("--size must be WxH") }
        if let faces {
            let model = FaceDetectorFactory.resolveModelPath(flag: faceModel,
                                                             environment: ProcessInfo.processInfo.environment,
                                                             configured: nil)
            let report = try FaceBenchmark(inputPath: faces, width: parts[0], height: parts[1], frames: frames,
                                           modelPath: model).run()
            try printJSON(report)
            return
        }
        var options = DemoSource.Options()
        options.width = parts[0]
        options.height = parts[1]
        options.fps = fps
        var matcher = TemplateMatcher.Options()
        matcher.frameScale = frameScale
        matcher.refineScale = refineScale > 0 ? refineScale : nil
        let benchmark = PipelineBenchmark(demo: options, templatePath: demoTemplate, quality: quality,
                                          matcherOptions: matcher)
        try printJSON(try benchmark.run(frames: frames, liveSeconds: liveSeconds))
    }

    private func printJSON(_ report: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        print(String(decoding: try encoder.encode(report), as: UTF8.self))
    }
}
