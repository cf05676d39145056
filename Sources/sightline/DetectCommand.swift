import ArgumentParser
import Foundation
import SightlineCore

struct DetectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "detect",
        abstract: "Find templates in still images; one JSON object per image, one per line."
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

    func run() throws {
        let loaded = try templates.map { try Template.load(argument: $0).with(threshold: threshold) }
        let detector = StillImageDetector(templates: loaded)
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
}
