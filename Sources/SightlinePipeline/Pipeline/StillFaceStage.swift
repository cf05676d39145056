import Foundation
import SightlineVision

/// Faces in a still photo (`sightline detect`): the detector runs on the
/// frame itself, synchronously, with no tracker; every face it finds up to
/// `limit` is reported.
public final class StillFaceStage: PipelineStage {
    public let stage: StageName? = .faces
    private let detector: FaceDetector
    private let limit: Int

    public init(detector: FaceDetector, limit: Int) {
        self.detector = detector
        self.limit = limit
    }

    public func process(_ context: inout FrameContext) throws {
        let image = context.image
        context.detections += try detector.detect(in: image, gray: context.gray, limit: limit)
            .map { $0.detection(frameWidth: image.width, frameHeight: image.height) }
    }
}
