import Foundation
import Logging
import SightlineSupport

/// Chooses the face detector: YuNet when a model loads (the one named by
/// flag, environment or config, else the YuNet-320 model shipped in
/// `models/`), otherwise the Haar cascades from Debian's opencv-data, and
/// says which, and why, in the log and in `/api/state`.
public enum FaceDetectorFactory {
    public static let modelEnvironmentKey = "SIGHTLINE_FACE_MODEL"
    /// The model shipped with Sightline (MIT, see models/README.md), found beside
    /// the working directory, the source tree or an installed share/sightline.
    public static let bundledModel = "models/face_detection_yunet_2023mar_320.onnx"
    /// A model value that asks for the Haar cascades.
    public static let haarChoice = "haar"

    /// The detector and, when it is Haar, why.
    public struct Choice {
        public let detector: FaceDetector
        public let fallbackReason: String?
    }

    /// The face model path, first found wins: the command-line flag
    /// (`--face-model`), the environment (SIGHTLINE_FACE_MODEL), the config
    /// (`faces.model`), then the shipped model. Empty strings count as unset;
    /// `haar` (any case) means no model: nil.
    public static func resolveModelPath(flag: String?, environment: [String: String], configured: String?,
                                        bundled: String? = locateBundledModel()) -> String? {
        let chosen = [flag, environment[modelEnvironmentKey], configured]
            .compactMap { $0 }
            .first { !$0.isEmpty }
        if let chosen { return chosen.lowercased() == haarChoice ? nil : chosen }
        return bundled
    }

    /// The shipped model's path, or nil when it is not there (a binary copied alone).
    public static func locateBundledModel() -> String? {
        let path = ResourceLocator.locate(bundledModel)
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }

    /// YuNet from `modelPath` when it loads, else Haar. A model path that
    /// fails to load is logged as an error (with what to do) and Haar runs.
    /// Throws only when neither can be made.
    public static func make(modelPath: String?, yunet: YuNetDetector.Options = YuNetDetector.Options(),
                            haar: HaarFaceDetector.Options = HaarFaceDetector.Options(),
                            logger: Logger) throws -> FaceDetector {
        try choose(modelPath: modelPath, yunet: yunet, haar: haar, logger: logger).detector
    }

    /// As `make`, with the reason when the detector is the Haar fallback.
    /// `sharing`: YuNet's models come from it (loaded once for every camera).
    public static func choose(modelPath: String?, yunet: YuNetDetector.Options = YuNetDetector.Options(),
                              haar: HaarFaceDetector.Options = HaarFaceDetector.Options(),
                              sharing: FaceSharing? = nil, logger: Logger) throws -> Choice {
        if let attributes = modelPath != nil ? yunet.attributes : haar.attributes,
           let problem = FaceAttributeReader.shapeModelProblem(attributes) {
            logger.warning("face attributes: \(problem); reading smile and eyes with OpenCV's cascades instead")
        }
        let reason: String
        if let modelPath {
            do {
                let detector = try YuNetDetector(modelPath: modelPath, options: yunet,
                                                 models: sharing?.models(for: modelPath, options: yunet))
                logger.info("face detector: \(detector.name) on \(detector.runtimeName) from \(modelPath)")
                if let note = detector.runtimeNote {
                    logger.notice("""
                        face network on OpenCV's dnn, about 3x slower than ONNX Runtime, which did not open \
                        (\(note)); scripts/setup.sh installs it
                        """)
                }
                return Choice(detector: detector, fallbackReason: nil)
            } catch {
                reason = "face model \(modelPath) did not load (\(error))"
                logger.error("\(reason); falling back to Haar cascades")
            }
        } else {
            reason = "no face model: faces.model is haar, or \(bundledModel) is missing "
                + "(set faces.model, --face-model or \(modelEnvironmentKey))"
            logger.notice("\(reason); using Haar cascades, slower and less accurate than YuNet")
        }
        let detector = try HaarFaceDetector(options: haar)
        logger.info("face detector: \(detector.name) from \(haar.cascadeDirectory)")
        return Choice(detector: detector, fallbackReason: reason)
    }
}
