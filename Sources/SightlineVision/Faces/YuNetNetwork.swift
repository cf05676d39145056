import CSightlineOpenCV
import Foundation
import SightlineSupport

/// The YuNet ONNX network behind the shim: one forward pass on a square BGR
/// input, decoded into faces in that input's pixels.
///
/// Belongs to the thread that owns its detector (see FaceDetector) (cv::dnn::Net is
/// not shared between threads); it keeps output buffers between calls.
final class YuNetNetwork {
    /// The model's declared input size, or this when the file does not say.
    static let fallbackInputSize = 320

    let inputSize: Int
    private let handle: OpaquePointer
    /// Output buffers per input shape (width, height).
    private var buffers: [[Int]: [UnsafeMutableBufferPointer<Float>]] = [:]

    init(modelPath: String) throws {
        guard FileManager.default.isReadableFile(atPath: modelPath) else {
            throw FaceDetectorError.modelUnreadable(path: modelPath)
        }
        var net: OpaquePointer?
        try OpenCVError.check { slcv_net_load(modelPath, &net, $0) }
        guard let net else { throw FaceDetectorError.modelUnreadable(path: modelPath) }
        handle = net
        inputSize = ONNXInputShape.squareInputSize(path: modelPath) ?? Self.fallbackInputSize
    }

    deinit {
        slcv_net_release(handle)
        for list in buffers.values { list.forEach { $0.deallocate() } }
    }

    /// Faces (before NMS) in a BGR input whose sides are multiples of 32.
    func run(_ input: ImageBuffer, scoreThreshold: Double) throws -> [FaceObservation] {
        precondition(input.channels == 3 && input.width % 32 == 0 && input.height % 32 == 0)
        let decoder = YuNetDecoder(inputWidth: input.width, inputHeight: input.height, scoreThreshold: scoreThreshold)
        let outputs = buffers(for: decoder)
        var lengths = [Int32](repeating: 0, count: outputs.count)
        let capacities = decoder.outputCapacities.map { Int32($0) }
        try withCStrings(YuNetDecoder.outputNames) { names in
            var pointers: [UnsafeMutablePointer<Float>?] = outputs.map { $0.baseAddress }
            try OpenCVError.check { err in
                slcv_net_forward(handle, input.cView, names, Int32(names.count), &pointers, capacities, &lengths, err)
            }
        }
        let views = zip(outputs, lengths).map { UnsafeBufferPointer(rebasing: $0[0..<Int($1)]) }
        return decoder.decode(views)
    }

    private func buffers(for decoder: YuNetDecoder) -> [UnsafeMutableBufferPointer<Float>] {
        let shape = [decoder.inputWidth, decoder.inputHeight]
        if let existing = buffers[shape] { return existing }
        let made = decoder.outputCapacities.map { capacity -> UnsafeMutableBufferPointer<Float> in
            let buffer = UnsafeMutableBufferPointer<Float>.allocate(capacity: capacity)
            buffer.initialize(repeating: 0)
            return buffer
        }
        buffers[shape] = made
        return made
    }
}
