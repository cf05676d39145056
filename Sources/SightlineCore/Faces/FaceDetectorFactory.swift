import Foundation
import Logging

/// Chooses the face detector: YuNet when a model path is given and loads,
/// otherwise the Haar cascades from Debian's opencv-data, and says which in
/// the log.
public enum FaceDetectorFactory {
    public static let modelEnvironmentKey = "SIGHTLINE_FACE_MODEL"

    /// The face model path, first found wins: the command-line flag
    /// (`--face-model`), the environment (SIGHTLINE_FACE_MODEL), the config
    /// (`faces.model`). Empty strings count as unset.
    public static func resolveModelPath(flag: String?, environment: [String: String], configured: String?) -> String? {
        [flag, environment[modelEnvironmentKey], configured]
            .compactMap { $0 }
            .first { !$0.isEmpty }
    }

    /// YuNet from `modelPath` when it loads, else Haar. A model path that
    /// fails to load is logged as an error (with what to do) and Haar runs.
    /// Throws only when neither can be made.
    public static func make(modelPath: String?, yunet: YuNetDetector.Options = YuNetDetector.Options(),
                            haar: HaarFaceDetector.Options = HaarFaceDetector.Options(),
                            logger: Logger) throws -> FaceDetector {
        if let modelPath {
            do {
                let detector = try YuNetDetector(modelPath: modelPath, options: yunet)
                logger.info("face detector: \(detector.name) from \(modelPath)")
                return detector
            } catch {
                logger.error("face model \(modelPath) did not load (\(error)); falling back to Haar cascades")
            }
        } else {
            logger.info("no face model set (faces.model, --face-model, \(modelEnvironmentKey)); using Haar cascades")
        }
        let detector = try HaarFaceDetector(options: haar)
        logger.info("face detector: \(detector.name) from \(haar.cascadeDirectory)")
        return detector
    }
}
