/// The protobuf wire format, as far as ONNX model files need it here
/// (`ONNXInputShape` reads an input's shape, `ONNXShapeFreeModel` rewrites
/// the declared shapes): a message's top-level fields, and a field written
/// back. Hand-written because two paths of a few fields are all that is read
/// and written; a protobuf library would mean ONNX's whole schema.
enum ProtobufWire {
    enum WireType: UInt64 { case varint = 0, fixed64 = 1, lengthDelimited = 2, fixed32 = 5 }

    /// One field: its number, its value (a varint, or a length-delimited
    /// payload; fixed-size values are only skipped) and where its bytes are,
    /// key included.
    struct Entry {
        var number: Int
        var varint: UInt64?
        var payload: ArraySlice<UInt8>?
        var bytes: Range<Int>
    }

    /// The top-level fields of one message; nil when it is malformed.
    static func entries(of message: ArraySlice<UInt8>) -> [Entry]? {
        var result: [Entry] = []
        var index = message.startIndex
        while index < message.endIndex {
            let start = index
            guard let key = varint(message, &index), let wire = WireType(rawValue: key & 7) else { return nil }
            let number = Int(key >> 3)
            switch wire {
            case .varint:
                guard let value = varint(message, &index) else { return nil }
                result.append(Entry(number: number, varint: value, payload: nil, bytes: start..<index))
            case .fixed64, .fixed32:
                let size = wire == .fixed64 ? 8 : 4
                guard message.endIndex - index >= size else { return nil }
                index += size
                result.append(Entry(number: number, varint: nil, payload: nil, bytes: start..<index))
            case .lengthDelimited:
                guard let length = varint(message, &index), length <= UInt64(message.endIndex - index) else { return nil }
                let end = index + Int(length)
                result.append(Entry(number: number, varint: nil, payload: message[index..<end], bytes: start..<end))
                index = end
            }
        }
        return result
    }

    /// A length-delimited field: key, length, payload.
    static func lengthDelimited(_ number: Int, _ payload: [UInt8]) -> [UInt8] {
        encodedVarint(UInt64(number) << 3 | WireType.lengthDelimited.rawValue) + encodedVarint(UInt64(payload.count))
            + payload
    }

    static func encodedVarint(_ value: UInt64) -> [UInt8] {
        var value = value
        var bytes: [UInt8] = []
        repeat {
            let low = UInt8(value & 0x7f)
            value >>= 7
            bytes.append(value == 0 ? low : low | 0x80)
        } while value != 0
        return bytes
    }

    static func varint(_ bytes: ArraySlice<UInt8>, _ index: inout Int) -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while index < bytes.endIndex, shift < 64 {
            let byte = bytes[index]
            index += 1
            value |= UInt64(byte & 0x7f) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
        return nil
    }
}
