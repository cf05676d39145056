import Foundation

/// Runs the same detectors as the live pipeline on still photos
/// (`sightline detect`), with the same detection objects.
public final class StillImageDetector {
    public struct Result: Codable, Sendable {
        public var file: String
        public var width: Int
        public var height: Int
        public var detections: [Detection]

        public func jsonData() throws -> Data {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.withoutEscapingSlashes]
            return try encoder.encode(self)
        }
    }

    private let templates: [Template]
    private let matcher: TemplateMatcher

    /// Photos are unrelated to each other: no tracking from one to the next.
    public init(templates: [Template], options: TemplateMatcher.Options = TemplateMatcher.Options()) {
        self.templates = templates
        var stills = options
        stills.tracking = false
        self.matcher = TemplateMatcher(options: stills)
    }

    public func detect(path: String) throws -> Result {
        let image = try ImageIO.read(path: path)
        return Result(file: path, width: image.width, height: image.height, detections: try detect(image: image))
    }

    public func detect(image: ImageBuffer) throws -> [Detection] {
        guard !templates.isEmpty else { return [] }
        return try matcher.match(templates: templates, gray: ImageOps.gray(image))
    }
}
