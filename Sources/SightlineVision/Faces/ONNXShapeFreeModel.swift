/// An ONNX model with the shapes its graph declares taken out, so that
/// ONNX Runtime runs it on inputs of any size.
///
/// Why: YuNet's files declare a fixed input (1x3x320x320, or 640x640) and
/// the shape of every intermediate tensor for it (`value_info`). OpenCV's dnn
/// ignores them and runs the network at any size; ONNX Runtime checks inputs
/// against the declaration and refuses a 320x192 letterbox. The network itself
/// (convolutions, and reshapes that keep the batch and infer the rest) works
/// at any multiple of 32, so the declarations go: the inputs' and outputs'
/// `shape` fields and the graph's `value_info` list. Nothing else changes.
///
/// The path rewritten: ModelProto.graph(7) → GraphProto.input(11) and
/// output(12) → ValueInfoProto.type(2) → TypeProto.tensor_type(1) →
/// shape(2), dropped; GraphProto.value_info(13), dropped.
enum ONNXShapeFreeModel {
    enum Field {
        static let modelGraph = 7, graphInput = 11, graphOutput = 12, graphValueInfo = 13
        static let valueInfoType = 2, typeTensor = 1, tensorShape = 2
    }

    /// The model's bytes without the declared shapes; nil when the file is
    /// not a protobuf message with a graph.
    static func rewritten(_ model: [UInt8]) -> [UInt8]? {
        rewriting(model[...], field: Field.modelGraph, required: true) { graph in
            guard let entries = ProtobufWire.entries(of: graph) else { return nil }
            var out: [UInt8] = []
            for entry in entries where entry.number != Field.graphValueInfo {
                if entry.number == Field.graphInput || entry.number == Field.graphOutput, let payload = entry.payload {
                    guard let freed = shapeless(valueInfo: payload) else { return nil }
                    out += ProtobufWire.lengthDelimited(entry.number, freed)
                } else {
                    out += graph[entry.bytes]
                }
            }
            return out
        }
    }

    /// A ValueInfoProto without its tensor type's shape.
    private static func shapeless(valueInfo: ArraySlice<UInt8>) -> [UInt8]? {
        rewriting(valueInfo, field: Field.valueInfoType) { type in
            rewriting(type, field: Field.typeTensor) { tensor in
                guard let entries = ProtobufWire.entries(of: tensor) else { return nil }
                return entries.filter { $0.number != Field.tensorShape }.flatMap { tensor[$0.bytes] }
            }
        }
    }

    /// `message` with each length-delimited field `field` replaced by what
    /// `change` makes of its payload (nil: malformed). `required`: nil when
    /// there is no such field.
    private static func rewriting(_ message: ArraySlice<UInt8>, field: Int, required: Bool = false,
                                  _ change: (ArraySlice<UInt8>) -> [UInt8]?) -> [UInt8]? {
        guard let entries = ProtobufWire.entries(of: message) else { return nil }
        var out: [UInt8] = []
        var found = false
        for entry in entries {
            if entry.number == field, let payload = entry.payload {
                guard let changed = change(payload) else { return nil }
                out += ProtobufWire.lengthDelimited(field, changed)
                found = true
            } else {
                out += message[entry.bytes]
            }
        }
        return !required || found ? out : nil
    }
}
