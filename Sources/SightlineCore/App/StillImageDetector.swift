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
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return try encoder.encode(self)
        }
    }

    /// Faces reported per photo at most.
    public static let defaultFaceLimit = 10

    private let templates: [Template]
    private let matcher: TemplateMatcher
    private let faceDetector: FaceDetector?
    private let faceLimit: Int

    /// `faceDetector` nil skips faces (`--no-faces`). Photos are unrelated
    /// to each other, so the matcher does not track from one to the next.
    /// Runs on the calling thread, which owns the detectors for their lifetime.
    public init(templates: [Template], options: TemplateMatcher.Options = TemplateMatcher.Options(),
                faceDetector: FaceDetector? = nil, faceLimit: Int = StillImageDetector.defaultFaceLimit) {
        self.templates = templates
        var stills = options
        stills.tracking = false
        self.matcher = TemplateMatcher(options: stills)
        self.faceDetector = faceDetector
        self.faceLimit = faceLimit
    }

    public func detect(path: String) throws -> Result {
        let image = try ImageIO.read(path: path)
        return Result(file: path, width: image.width, height: image.height, detections: try detect(image: image))
    }

    public func detect(image: ImageBuffer) throws -> [Detection] {
        let gray = try ImageOps.gray(image)
        var detections: [Detection] = []
        if let faceDetector {
            detections += try faceDetector.detect(in: image, gray: gray, limit: faceLimit)
                .map { $0.detection(frameWidth: image.width, frameHeight: image.height) }
        }
        if !templates.isEmpty {
            detections += try matcher.match(templates: templates, gray: gray)
        }
        return detections
    }
}
