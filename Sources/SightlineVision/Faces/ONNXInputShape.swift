import Foundation
import SightlineSupport

/// Reads the declared shape of an ONNX model's first input, so the YuNet
/// detector takes its fixed input size from the model file itself
/// (cv::dnn in OpenCV 4.6 does not report it).
///
/// Only the few protobuf fields on the path ModelProto.graph(7) →
/// GraphProto.input(11) → ValueInfoProto.type(2) → TypeProto.tensor_type(1)
/// → shape(2) → dim(1) → dim_value(1) are decoded; everything else is skipped.
public enum ONNXInputShape {
    enum Field {
        static let modelGraph = 7, graphInput = 11, valueInfoType = 2
        static let typeTensor = 1, tensorShape = 2, shapeDim = 1, dimValue = 1
    }

    /// The dimensions of the first input (0 for a symbolic dimension); nil
    /// when the file cannot be read or holds no such input.
    public static func read(path: String) -> [Int]? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return read(model: [UInt8](data))
    }

    /// As `read(path:)`, on the model file's bytes.
    public static func read(model bytes: [UInt8]) -> [Int]? {
        guard let graph = firstField(Field.modelGraph, in: bytes[...]),
              let input = firstField(Field.graphInput, in: graph),
              let type = firstField(Field.valueInfoType, in: input),
              let tensor = firstField(Field.typeTensor, in: type),
              let shape = firstField(Field.tensorShape, in: tensor) else { return nil }
        let dims = fields(Field.shapeDim, in: shape).map { dim in
            varintField(Field.dimValue, in: dim).map { Int(truncatingIfNeeded: $0) } ?? 0
        }
        return dims.isEmpty ? nil : dims
    }

    /// The square spatial size of an NCHW input ([1, 3, S, S]), if it has one.
    public static func squareInputSize(path: String) -> Int? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return squareInputSize(model: [UInt8](data))
    }

    /// As `squareInputSize(path:)`, on the model file's bytes.
    public static func squareInputSize(model bytes: [UInt8]) -> Int? {
        guard let dims = read(model: bytes), dims.count == 4, dims[2] > 0, dims[2] == dims[3] else { return nil }
        return dims[2]
    }

    private static func firstField(_ number: Int, in message: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        ProtobufWire.entries(of: message)?.first { $0.number == number && $0.payload != nil }?.payload
    }

    private static func fields(_ number: Int, in message: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        (ProtobufWire.entries(of: message) ?? []).compactMap { $0.number == number ? $0.payload : nil }
    }

    private static func varintField(_ number: Int, in message: ArraySlice<UInt8>) -> UInt64? {
        ProtobufWire.entries(of: message)?.first { $0.number == number && $0.varint != nil }?.varint
    }
}
