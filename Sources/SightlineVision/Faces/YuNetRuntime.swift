/// Which runtime runs the YuNet network (`faces.runtime`).
public enum YuNetRuntime: String, Sendable, CaseIterable, Codable {
    /// ONNX Runtime when its library is installed, else OpenCV's dnn.
    case auto
    /// ONNX Runtime, or no YuNet (the model fails to load, and Haar runs).
    case onnxruntime
    /// OpenCV's dnn (Debian's OpenCV 4.6).
    case opencv
}
