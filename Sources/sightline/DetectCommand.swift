import ArgumentParser
import Foundation
import SightlineCore
import SightlineVision
import SightlinePipeline
import SightlineHTTP
import SightlineEvents

struct DetectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "detect",
        abstract: "Find faces and templates in still images; one JSON object per image, one per line."
    )

    @Argument(help: "Image files.")
    var images: [String]

    @Flag(help: "Print JSON lines (the only output format).")
    var json = false

    @Option(name: .customLong("template"), help: "Template image PATH[=NAME]; repeatable.")
    var templates: [String] = []

    @Option(help: "Acceptance threshold for templates (0-1).")
    var threshold = TemplateMatcher.Options.defaultThreshold

    @Flag(help: "Skip face detection.")
    var noFaces = false

    @Option(help: "YuNet face model (ONNX), or haar for the Haar cascades; also SIGHTLINE_FACE_MODEL or faces.model. Default: the shipped models/face_detection_yunet_2023mar_320.onnx.")
    var faceModel: String?

    @Option(help: "Most faces reported per image.")
    var maxFaces = StillImageDetector.defaultFaceLimit

    @Option(help: "Log level (trace, debug, info, notice, warning, error, critical); logs go to stderr.")
    var logLevel = "warning"

    func run() throws {
        let loaded = try templates.map { try Template.load(argument: $0).with(threshold: threshold) }
        let detector = StillImageDetector(templates: loaded, faceDetector: try makeFaceDetector(), faceLimit: maxFaces)
        var failed = false
        for path in images {
            do {
                let result = try detector.detect(path: path)
                print(String(decoding: try result.jsonData(), as: UTF8.self))
            } catch {
                failed = true
                let line = ["file": path, "error": "\(error)"]
                let data = try JSONSerialization.data(withJSONObject: line, options: [.sortedKeys, .withoutEscapingSlashes])
                print(String(decoding: data, as: UTF8.self))
            }
        }
        if failed { throw ExitCode(1) }
    }

    /// The face detector for still photos, or nil with --no-faces. The model
    /// path comes from --face-model, then SIGHTLINE_FACE_MODEL, then the shipped model; a model that
    /// does not load is reported on stderr and Haar runs instead.
    private func makeFaceDetector() throws -> FaceDetector? {
        guard !noFaces else { return nil }
        let logger = try LogSetup.bootstrap(level: logLevel)
        let path = FaceDetectorFactory.resolveModelPath(
            flag: faceModel, environment: ProcessInfo.processInfo.environment, configured: nil)
        return try FaceDetectorFactory.make(modelPath: path, yunet: .stillImage, haar: .stillImage, logger: logger)
    }
}
