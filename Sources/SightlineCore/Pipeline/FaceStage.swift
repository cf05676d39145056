import Foundation

/// Finds faces, keeps their ids across frames and names the ones it knows.
/// Detection runs every `detectEvery` frames; on the frames between, the
/// tracker carries the boxes forward by their motion.
///
/// Threads: owned by the pipeline (one frame at a time); the detector and
/// tracker are used only here, FaceService guards what it shares with the
/// HTTP side.
public final class FaceStage: PipelineStage {
    public let stage: StageName? = .faces
    private let detector: FaceDetector
    private let tracker: FaceTracker
    private let service: FaceService
    private let detectEvery: Int
    private let limit: Int
    private var framesSeen = 0

    public init(detector: FaceDetector, tracker: FaceTracker, service: FaceService, detectEvery: Int, limit: Int) {
        self.detector = detector
        self.tracker = tracker
        self.service = service
        self.detectEvery = max(1, detectEvery)
        self.limit = limit
    }

    public var detectorName: String { detector.name }

    public func process(_ context: inout FrameContext) throws {
        let frame = context.frame
        let tracked: [TrackedFace]
        if framesSeen % detectEvery == 0 {
            let gray = try context.gray ?? ImageOps.gray(frame.image)
            tracked = tracker.update(try detector.detect(in: frame.image, gray: gray, limit: limit), at: frame.capturedAt)
        } else {
            tracked = tracker.predict(at: frame.capturedAt)
        }
        framesSeen += 1
        let faces = service.process(tracked, frame: frame.image, gray: context.gray, at: frame.capturedAt)
        context.detections += faces.map { $0.detection(frameWidth: frame.image.width, frameHeight: frame.image.height) }
    }
}
