import Foundation
import SightlineVision

/// Writes the wire's per-frame JSON (`FrameMessage`, `SEIBoxes.Payload`) by
/// hand, field by field in the order their Codable conformances declare
/// them, optional fields omitted when nil, `/` not escaped: what
/// `WireJSON.encoder()` writes, read back as the same values (the tests
/// compare both on every field).
///
/// Why not JSONEncoder: these run for every frame of every camera (twice
/// for H.264: the message and its SEI), and JSONEncoder's were 0.008 cores
/// of issue 41's pan (perf, 10 viewers). A message of 10 detections took
/// JSONEncoder 0.082 ms and takes this 0.014 (1,000 in a loop, this machine).
///
/// A value used on one thread.
struct WireJSONWriter {
    /// A number JSON cannot hold (NaN, infinity); JSONEncoder refuses them too.
    struct InvalidNumber: Error, CustomStringConvertible {
        let key: String
        var description: String { "\(key) is not a finite number" }
    }

    private(set) var bytes: [UInt8] = []
    /// Whether the next value or key starts its object or array (no comma before it).
    private var atStart = true
    /// The key being written (for errors).
    private var lastKey = ""

    init() { bytes.reserveCapacity(1024) }

    var data: Data { Data(bytes) }

    // MARK: - Structure

    mutating func openObject() { open(UInt8(ascii: "{")) }
    mutating func closeObject() { close(UInt8(ascii: "}")) }
    mutating func openArray() { open(UInt8(ascii: "[")) }
    mutating func closeArray() { close(UInt8(ascii: "]")) }

    private mutating func open(_ bracket: UInt8) {
        separate()
        bytes.append(bracket)
        atStart = true
    }

    private mutating func close(_ bracket: UInt8) {
        bytes.append(bracket)
        atStart = false
    }

    mutating func key(_ name: String) {
        separate()
        quoted(name)
        bytes.append(UInt8(ascii: ":"))
        atStart = true
        lastKey = name
    }

    private mutating func separate() {
        if !atStart { bytes.append(UInt8(ascii: ",")) }
        atStart = false
    }

    // MARK: - Values

    mutating func string(_ value: String) {
        separate()
        quoted(value)
    }

    mutating func integer<T: BinaryInteger>(_ value: T) {
        separate()
        bytes.append(contentsOf: String(value).utf8)
    }

    mutating func number(_ value: Double) throws {
        guard value.isFinite else { throw InvalidNumber(key: lastKey) }
        separate()
        bytes.append(contentsOf: value.description.utf8)
    }

    mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    /// A string in quotes: `"` and `\` escaped, control characters as
    /// `\n`, `\r`, `\t`, `\b`, `\f` or `\u00XX`, everything else as its UTF-8.
    private mutating func quoted(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0x08: bytes.append(contentsOf: [0x5C, UInt8(ascii: "b")])
            case 0x0C: bytes.append(contentsOf: [0x5C, UInt8(ascii: "f")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                          hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    // MARK: - The wire's types

    mutating func box(_ box: NormalizedBox) throws {
        openObject()
        key("x"); try number(box.x)
        key("y"); try number(box.y)
        key("w"); try number(box.w)
        key("h"); try number(box.h)
        closeObject()
    }

    /// A detection as DESIGN.md's /ws contract spells it (`Detection`'s fields in order).
    mutating func detection(_ detection: Detection) throws {
        openObject()
        key("kind"); string(detection.kind.rawValue)
        if let id = detection.id { key("id"); integer(id) }
        if let label = detection.label { key("label"); string(label) }
        key("score"); try number(detection.score)
        key("box"); try box(detection.box)
        try optional("scale", detection.scale)
        try optional("angle", detection.angle)
        try optional("roll", detection.roll)
        try optional("yaw", detection.yaw)
        if let landmarks = detection.landmarks {
            key("landmarks")
            openObject()
            for (name, point) in landmarks.sorted(by: { $0.key < $1.key }) {
                key(name)
                openArray()
                for value in point { try number(value) }
                closeArray()
            }
            closeObject()
        }
        if let name = detection.name { key("name"); string(name) }
        try optional("nameConfidence", detection.nameConfidence)
        try optional("smile", detection.smile)
        if let eyesClosed = detection.eyesClosed { key("eyesClosed"); bool(eyesClosed) }
        closeObject()
    }

    mutating func detections(_ detections: [Detection]) throws {
        openArray()
        for detection in detections { try self.detection(detection) }
        closeArray()
    }

    private mutating func optional(_ name: String, _ value: Double?) throws {
        guard let value else { return }
        key(name)
        try number(value)
    }
}
