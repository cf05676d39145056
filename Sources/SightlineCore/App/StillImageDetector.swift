import Foundation
import SightlineVision
import SightlinePipeline
import SightlineHTTP
import SightlineEvents

/// Runs the same detection stages as the live pipeline on still photos
/// (`sightline detect`), with the same detection objects: the stages come
/// from `CameraAssembly.stillStages`.
///
/// Threads: runs on the calling thread, which owns the stages and detectors.
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

    /// Faces reported per photo at most when no limit is given: every face
    /// a detector can find (a still photo has no frame budget).
    public static let defaultFaceLimit = 1000

    private let stages: [PipelineStage]
    private var seq: UInt64 = 0

    /// `faceDetector` nil skips faces (`--no-faces`). Photos are unrelated
    /// to each other, so the matcher does not track from one to the next.
    public init(templates: [Template], options: TemplateMatcher.Options = TemplateMatcher.Options(),
                faceDetector: FaceDetector? = nil, faceLimit: Int = StillImageDetector.defaultFaceLimit) {
        stages = CameraAssembly.stillStages(templates: templates, matcher: options, faceDetector: faceDetector,
                                            faceLimit: faceLimit)
    }

    public func detect(path: String) throws -> Result {
        let image = try ImageIO.read(path: path)
        return Result(file: path, width: image.width, height: image.height, detections: try detect(image: image))
    }

    public func detect(image: ImageBuffer) throws -> [Detection] {
        seq += 1
        var context = FrameContext(frame: Frame(seq: seq, capturedAt: 0, capturedNanos: 0, image: image))
        for stage in stages { try stage.run(&context) }
        return context.detections
    }
}
