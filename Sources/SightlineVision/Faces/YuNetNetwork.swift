import CSightlineOpenCV
import Foundation
import SightlineSupport

/// The YuNet ONNX network: one forward pass on a BGR input whose sides are
/// multiples of 32, decoded into faces in that input's pixels. It runs on
/// ONNX Runtime when that is installed (about three times faster on one
/// thread than Debian's OpenCV 4.6 dnn; `YuNetRuntime`), else on OpenCV's dnn.
///
/// Belongs to the thread that owns its detector (see FaceDetector) (neither
/// a cv::dnn::Net nor the runtime session is shared between threads); it
/// keeps output buffers between calls.
final class YuNetNetwork {
    /// The model's declared input size, or this when the file does not say.
    static let fallbackInputSize = 320
    /// How a pass larger than the model's own size (a fine pass) hands the
    /// buffers ONNX Runtime freed back to the system (`MallocArenas`).
    /// `atOnce`: after the pass, so they do not stay resident (some 25 MB
    /// at 640 px: the demo's start reached 198 MiB without it, 155 with it).
    /// `paced`: at most every `pacedTrimSeconds` (the periodic trim does the
    /// rest), for a pass over a large frame: a trim also hands back the
    /// buffers every usual pass uses again, the frame's picture and gray copy
    /// first (8 MB at 1080p), and they come back as page faults, fresh pages
    /// the kernel zeroes. A 1080p camera with 10 viewers took 5,200 faults a
    /// second on its face thread trimming after every fine pass and 1,000
    /// without, 0.262 against 0.231 cores for the whole process; on
    /// vtest.avi (768x576) trimming at once cost no CPU and kept 20 MiB less
    /// at its peak (148 against 168).
    enum LargePassTrim { case atOnce, paced }
    var largePassTrim = LargePassTrim.atOnce
    static let pacedTrimSeconds = 5.0
    /// Frames larger than this (pixels) pace their trims.
    static let pacedTrimPixels = 1280 * 720

    private enum Backend {
        case openCV(OpaquePointer)
        case onnxRuntime(ONNXRuntimeSession)
    }

    let inputSize: Int
    /// What runs it, for the log and `/api/state`: "onnxruntime 1.32.0" or "opencv".
    let runtimeName: String
    /// Why `auto` did not pick ONNX Runtime (nil when it did, or was not asked).
    let runtimeNote: String?
    private let backend: Backend
    /// Output buffers per input shape (width, height).
    private var buffers: [[Int]: [UnsafeMutableBufferPointer<Float>]] = [:]

    init(modelPath: String, runtime: YuNetRuntime = .auto) throws {
        guard let data = FileManager.default.contents(atPath: modelPath) else {
            throw FaceDetectorError.modelUnreadable(path: modelPath)
        }
        let bytes = [UInt8](data)
        inputSize = ONNXInputShape.squareInputSize(model: bytes) ?? Self.fallbackInputSize
        var note: String?
        if runtime != .opencv {
            do {
                guard let model = ONNXShapeFreeModel.rewritten(bytes) else {
                    throw FaceDetectorError.modelUnreadable(path: modelPath)
                }
                backend = .onnxRuntime(try ONNXRuntimeSession(model: model))
                MallocArenas.returnFreedPages()  // the graph's optimization, some 8 MB in passing
                runtimeName = "onnxruntime " + ((try? ONNXRuntimeSession.availability.get()) ?? "")
                runtimeNote = nil
                return
            } catch {
                if runtime == .onnxruntime { throw error }
                note = "\(error)"
            }
        }
        var net: OpaquePointer?
        try OpenCVError.check { slcv_net_load(modelPath, &net, $0) }
        guard let net else { throw FaceDetectorError.modelUnreadable(path: modelPath) }
        backend = .openCV(net)
        runtimeName = "opencv"
        runtimeNote = note
    }

    deinit {
        if case .openCV(let handle) = backend { slcv_net_release(handle) }
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
            switch backend {
            case .openCV(let handle):
                try OpenCVError.check { err in
                    slcv_net_forward(handle, input.cView, names, Int32(names.count), &pointers, capacities, &lengths,
                                     err)
                }
            case .onnxRuntime(let session):
                lengths = try session.run(input, names: names, outputs: pointers, capacities: capacities)
                // Without its arena (see sightline_onnx.h) ONNX Runtime frees a pass's buffers to
                // malloc, which keeps them; a pass larger than the model's own size hands them back
                // as `largePassTrim` says, rather than at the next periodic trim
                // (MallocArenas.startReturningFreedPages).
                if input.width * input.height > inputSize * inputSize {
                    switch largePassTrim {
                    case .atOnce: MallocArenas.returnFreedPages()
                    case .paced: MallocArenas.returnFreedPages(atMostEvery: Self.pacedTrimSeconds,
                                                               now: Double(MonotonicClock.nanos()) / 1e9)
                    }
                }
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
