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

    public init(templates: [Template], matcher: TemplateMatcher = TemplateMatcher()) {
        self.templates = templates
        self.matcher = matcher
    }

    public func detect(path: String) throws -> Result {
        let image = try ImageIO.read(path: path)
        return Result(file: path, width: image.width, height: image.height, detections: try detect(image: image))
    }

    public func detect(image: ImageBuffer) throws -> [Detection] {
        guard !templates.isEmpty else { return [] }
        let small = try matcher.shrink(gray: ImageOps.gray(image))
        return try matcher.match(templates: templates, in: small)
    }
}
