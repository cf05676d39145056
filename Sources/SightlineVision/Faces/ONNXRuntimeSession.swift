import CSightlineONNX
import Foundation

/// A network loaded into ONNX Runtime (the CSightlineONNX shim over its C
/// API, opened with dlopen): one forward pass on a BGR image at a time.
///
/// Belongs to the thread that owns its network (YuNetNetwork), like a
/// cv::dnn::Net: the session keeps its input tensor between calls.
final class ONNXRuntimeSession {
    /// The library's name in the dynamic linker's search path (scripts/setup.sh
    /// installs PyPI's build as /usr/local/lib/libonnxruntime.so.1).
    static let libraryName = "libonnxruntime.so.1"

    /// ONNX Runtime's version once it is open, or why it cannot be; asked
    /// once per process (the shim opens the library once).
    static let availability: Result<String, ONNXRuntimeError> = {
        var version = [CChar](repeating: 0, count: 32)
        var error = sl_onnx_error()
        let code = sl_onnx_open(libraryName, &version, version.count, &error)
        guard code == 0 else { return .failure(ONNXRuntimeError(code: code, error)) }
        return .success(String(decoding: version.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }()

    private let handle: OpaquePointer

    /// A session on the model's bytes.
    init(model: [UInt8]) throws {
        _ = try Self.availability.get()
        var error = sl_onnx_error()
        guard let made = model.withUnsafeBytes({ sl_onnx_session_new($0.baseAddress, $0.count, &error) }) else {
            throw ONNXRuntimeError(code: error.code, error)
        }
        handle = made
    }

    deinit { sl_onnx_session_free(handle) }

    /// One forward pass on `input` (BGR), its outputs `names` copied into
    /// `outputs`; the floats written to each.
    func run(_ input: ImageBuffer, names: [UnsafePointer<CChar>?], outputs: [UnsafeMutablePointer<Float>?],
             capacities: [Int32]) throws -> [Int32] {
        precondition(input.channels == 3 && names.count == outputs.count && names.count == capacities.count)
        let count = names.count
        var lengths = [Int32](repeating: 0, count: count)
        var error = sl_onnx_error()
        let code = outputs.withUnsafeBufferPointer { pointers in
            sl_onnx_run_bgr(handle, input.bytes, Int32(input.width), Int32(input.height), Int32(input.stride),
                            names, Int32(count), pointers.baseAddress, capacities, &lengths, &error)
        }
        guard code == 0 else { throw ONNXRuntimeError(code: code, error) }
        return lengths
    }
}

/// An error from ONNX Runtime (or from opening it).
public struct ONNXRuntimeError: Error, CustomStringConvertible, Sendable {
    public let code: Int32
    public let message: String
    public var description: String { "ONNX Runtime: \(message)" }

    init(code: Int32, _ error: sl_onnx_error) {
        self.code = code
        var error = error
        message = withUnsafeBytes(of: &error.message) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
}
