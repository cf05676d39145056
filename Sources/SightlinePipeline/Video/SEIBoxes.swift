import Foundation
import SightlineVision
import SightlineSupport

/// A frame's boxes inside its H.264 access unit (DESIGN.md, `/ws?video=h264`):
/// an SEI NAL unit (type 6, nal_ref_idc 0) holding one
/// `user_data_unregistered` message (payload type 5) with Sightline's UUID
/// and then UTF-8 JSON `{"seq", "capturedAt", "width", "height",
/// "detections"}`, the detections exactly as the frame's `/ws` JSON has them.
/// Whatever keeps only the video (a clip, a relay, another program) keeps
/// each frame's boxes.
public enum SEIBoxes {
    /// 1c9042a8-8563-404c-b2a4-f8dd707b1bbd
    public static let uuid: [UInt8] = [0x1c, 0x90, 0x42, 0xa8, 0x85, 0x63, 0x40, 0x4c,
                                       0xb2, 0xa4, 0xf8, 0xdd, 0x70, 0x7b, 0x1b, 0xbd]
    static let userDataUnregistered = 5

    /// The JSON the SEI carries.
    public struct Payload: Codable, Sendable, Equatable {
        public var seq: UInt64
        public var capturedAt: Double
        public var width: Int
        public var height: Int
        public var detections: [Detection]
        /// As in the frame's JSON: on a frame not analysed, the seq of the frame the detections are from.
        public var boxesFrom: UInt64?

        public init(seq: UInt64, capturedAt: Double, width: Int, height: Int, detections: [Detection],
                    boxesFrom: UInt64? = nil) {
            self.boxesFrom = boxesFrom
            self.seq = seq
            self.capturedAt = capturedAt
            self.width = width
            self.height = height
            self.detections = detections
        }

        /// The boxes of a processed frame, as its `/ws` message has them.
        public init(frame: ProcessedFrame) {
            self.init(seq: frame.seq, capturedAt: frame.capturedAt, width: frame.width, height: frame.height,
                      detections: frame.detections)
        }

        /// As JSON, its detections written as the frame's `/ws` message writes them (`WireJSONWriter`).
        public func jsonData() throws -> Data {
            var json = WireJSONWriter()
            json.openObject()
            json.key("seq"); json.integer(seq)
            json.key("capturedAt"); try json.number(capturedAt)
            json.key("width"); json.integer(width)
            json.key("height"); json.integer(height)
            json.key("detections"); try json.detections(detections)
            if let boxesFrom { json.key("boxesFrom"); json.integer(boxesFrom) }
            json.closeObject()
            return json.data
        }
    }

    /// The SEI NAL unit (header first, no start code) carrying the payload's JSON.
    public static func nalUnit(for payload: Payload) throws -> Data {
        nalUnit(userData: try payload.jsonData())
    }

    /// An SEI NAL unit with one user_data_unregistered message: `uuid`, then
    /// `userData`; the payload size coded with a 0xFF byte for every 255,
    /// rbsp trailing bits, emulation prevention over all after the header.
    public static func nalUnit(userData: Data, uuid: [UInt8] = uuid) -> Data {
        precondition(uuid.count == 16)
        var rbsp: [UInt8] = []
        rbsp.reserveCapacity(userData.count + 24)
        appendCoded(userDataUnregistered, to: &rbsp)
        appendCoded(uuid.count + userData.count, to: &rbsp)
        rbsp += uuid
        rbsp += userData
        rbsp.append(0x80)   // rbsp_stop_one_bit and alignment zeros
        var unit = Data([AnnexB.UnitType.sei])   // forbidden_zero_bit 0, nal_ref_idc 0, type 6
        unit.append(AnnexB.addingEmulationPrevention(rbsp))
        return unit
    }

    /// The messages of an SEI NAL unit (header first): each one's payload
    /// type and bytes. Stops at the trailing bits, or at the first message
    /// that runs past the end (a damaged unit gives what came before).
    public static func messages(inSEI unit: Data) -> [(type: Int, payload: Data)] {
        guard let header = unit.first, header & 0x1F == AnnexB.UnitType.sei else { return [] }
        let rbsp = [UInt8](AnnexB.removingEmulationPrevention(unit.dropFirst()))
        var messages: [(type: Int, payload: Data)] = []
        var at = 0
        // more_rbsp_data: anything before the final 0x80 byte.
        while at < rbsp.count - 1 || (at == rbsp.count - 1 && rbsp[at] != 0x80) {
            guard let type = readCoded(rbsp, &at), let size = readCoded(rbsp, &at), at + size <= rbsp.count else { break }
            messages.append((type, Data(rbsp[at..<(at + size)])))
            at += size
        }
        return messages
    }

    /// The JSON of a Sightline user_data_unregistered message in an SEI unit, or nil.
    public static func userData(inSEI unit: Data, uuid: [UInt8] = uuid) -> Data? {
        for message in messages(inSEI: unit) where message.type == userDataUnregistered {
            if message.payload.count >= 16 && message.payload.prefix(16).elementsEqual(uuid) {
                return message.payload.dropFirst(16)
            }
        }
        return nil
    }

    /// The JSON of the first Sightline SEI in an access unit (Annex B), or nil.
    public static func userData(in accessUnit: Data) -> Data? {
        for unit in AnnexB.units(in: accessUnit) where unit.type == AnnexB.UnitType.sei {
            if let json = userData(inSEI: unit.bytes(in: accessUnit)) { return json }
        }
        return nil
    }

    /// The decoded payload of the first Sightline SEI in an access unit, or nil.
    public static func payload(in accessUnit: Data) throws -> Payload? {
        guard let json = userData(in: accessUnit) else { return nil }
        return try JSONDecoder().decode(Payload.self, from: json)
    }

    /// A payloadType or payloadSize: a 0xFF byte for every 255, then the rest.
    private static func appendCoded(_ value: Int, to bytes: inout [UInt8]) {
        var left = value
        while left >= 255 {
            bytes.append(0xFF)
            left -= 255
        }
        bytes.append(UInt8(left))
    }

    private static func readCoded(_ bytes: [UInt8], _ at: inout Int) -> Int? {
        var value = 0
        while at < bytes.count {
            let byte = bytes[at]
            at += 1
            value += Int(byte)
            if byte != 0xFF { return value }
        }
        return nil
    }
}
