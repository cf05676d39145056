import Foundation

/// Why a face detector could not be made; the message says what to do.
public enum FaceDetectorError: Error, CustomStringConvertible, Sendable {
    case modelUnreadable(path: String)
    case cascadeMissing(path: String)

    public var description: String {
        switch self {
        case .modelUnreadable(let path):
            return "face model \(path) cannot be read; set faces.model, --face-model or SIGHTLINE_FACE_MODEL "
                + "to a YuNet ONNX file (face_detection_yunet_2023mar*.onnx), or leave it unset to use Haar"
        case .cascadeMissing(let path):
            return "Haar cascade \(path) is missing; install Debian's opencv-data package "
                + "(apt-get install opencv-data) or give a face model"
        }
    }
}
