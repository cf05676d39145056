import Foundation
import Testing
@testable import SightlineVision
@testable import SightlinePipeline
import SightlineTesting

@Suite("Video: SEI boxes")
struct VideoSEIBoxesTests {
    static let face = Detection(kind: .face, id: 7, score: 0.93, box: NormalizedBox(x: 0.41, y: 0.22, w: 0.12, h: 0.16),
                                roll: -4.5, yaw: 12, landmarks: ["rightEye": [0.44, 0.27], "leftEye": [0.5, 0.27]],
                                name: "Ada/Lovelace", nameConfidence: 0.81, smile: 0.12, eyesClosed: false)
    static let logo = Detection.template(label: "logo", score: 0.82, scale: 1.25, angle: 0,
                                         box: NormalizedBox(x: 0.1, y: 0.55, w: 0.2, h: 0.15))

    /// The bytes of the unit's RBSP (header dropped, emulation prevention removed).
    static func rbsp(_ unit: Data) -> [UInt8] { Array(AnnexB.removingEmulationPrevention(unit.dropFirst())) }

    @Test("the unit: type 6, nal_ref_idc 0, payload type 5, size, UUID, JSON, trailing bits")
    func layout() throws {
        let json = Data(#"{"seq":1}"#.utf8)
        let unit = SEIBoxes.nalUnit(userData: json)
        #expect(unit.first == 0x06)
        #expect(Self.rbsp(unit) == [5, UInt8(16 + json.count)] + SEIBoxes.uuid + Array(json) + [0x80])
        #expect(SEIBoxes.uuid.map { String(format: "%02x", $0) }.joined() == "1c9042a88563404cb2a4f8dd707b1bbd")
        #expect(SEIBoxes.userData(inSEI: unit) == json)
    }

    @Test("payload sizes around 255 and 510 are coded with 0xFF bytes and read back",
          arguments: [0, 1, 238, 239, 240, 254, 255, 493, 494, 495, 600, 70_000])
    func sizes(jsonBytes: Int) throws {
        let json = Data(repeating: UInt8(ascii: "x"), count: jsonBytes)
        let unit = SEIBoxes.nalUnit(userData: json)
        let size = 16 + jsonBytes
        let rbsp = Self.rbsp(unit)
        let ffs = size / 255
        #expect(rbsp[0] == 5)
        #expect(Array(rbsp[1..<(1 + ffs)]) == Array(repeating: 0xFF, count: ffs))
        #expect(Int(rbsp[1 + ffs]) == size % 255)
        #expect(rbsp.count == 1 + ffs + 1 + size + 1)
        #expect(SEIBoxes.userData(inSEI: unit) == json)
        let messages = SEIBoxes.messages(inSEI: unit)
        #expect(messages.count == 1 && messages[0].type == 5 && messages[0].payload.count == size)
    }

    // JSON has no 0x00 and the UUID neither, so a Sightline SEI never needs
    // escaping in practice; the builder and the parser must still get it
    // right. A UUID starting with zeros after a size byte of 0x00 (a size of
    // 255 or 510) and user data full of zeros make every 00 00 0x pattern.
    @Test("emulation prevention in the built unit, and the round trip through it",
          arguments: [(239, 0), (494, 0), (239, 1), (239, 2), (239, 3), (10, 0), (10, 3)])
    func escaping(jsonBytes: Int, third: UInt8) throws {
        let uuid: [UInt8] = [0x00, 0x00, third, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x02, 0x00, 0x00, 0x03, 0x00, 0x00]
        var data = Data(repeating: 0, count: jsonBytes)
        for i in stride(from: 2, to: jsonBytes, by: 5) { data[i] = UInt8(i % 4) }
        let unit = SEIBoxes.nalUnit(userData: data, uuid: uuid)
        // No start code and no unescaped 00 00 0x inside the unit.
        let bytes = Array(unit)
        for i in 0..<(bytes.count - 2) where bytes[i] == 0 && bytes[i + 1] == 0 {
            #expect(bytes[i + 2] >= 3, "unescaped 00 00 \(bytes[i + 2]) at \(i)")
        }
        #expect(AnnexB.units(in: Data([0, 0, 0, 1]) + unit + Data([0, 0, 1, 0x65, 0x88])).map(\.type) == [6, 5])
        #expect(SEIBoxes.userData(inSEI: unit, uuid: uuid) == data)
        #expect(SEIBoxes.userData(inSEI: unit) == nil)   // not Sightline's UUID
    }

    @Test("a size byte of 0x00 followed by zeros: 255-byte payload, escaped where the size ends")
    func sizeByteZero() {
        let uuid: [UInt8] = [0x00, 0x00, 0x01] + Array(repeating: 0x11, count: 13)
        let unit = SEIBoxes.nalUnit(userData: Data(repeating: 0x41, count: 255 - 16), uuid: uuid)
        // 06 | 05 FF 00 00 03 00 01 ...: the size's 00 and the UUID's 00 00 01.
        #expect(Array(unit.prefix(8)) == [0x06, 0x05, 0xFF, 0x00, 0x00, 0x03, 0x00, 0x01])
        #expect(SEIBoxes.userData(inSEI: unit, uuid: uuid)?.count == 239)
    }

    @Test("the JSON payload: seq, capturedAt, size, and exactly the /ws detections")
    func payloadMatchesTheWSMessage() throws {
        let payload = SEIBoxes.Payload(seq: 1234, capturedAt: 1763802000.123, width: 640, height: 480,
                                       detections: [Self.face, Self.logo])
        let unit = try SEIBoxes.nalUnit(for: payload)
        let json = try #require(SEIBoxes.userData(inSEI: unit))
        #expect(try JSONDecoder().decode(SEIBoxes.Payload.self, from: json) == payload)
        let object = try JSONSerialization.jsonObject(with: json) as! [String: Any]
        #expect(Set(object.keys) == ["seq", "capturedAt", "width", "height", "detections"])
        #expect(object["seq"] as? Int == 1234 && object["width"] as? Int == 640 && object["height"] as? Int == 480)
        #expect(String(decoding: json, as: UTF8.self).contains(#""name":"Ada/Lovelace""#))   // slashes as on /ws

        let message = FrameMessage(seq: 1234, capturedAt: 1763802000.123, width: 640, height: 480, jpegBytes: 40211,
                                   detections: [Self.face, Self.logo])
        let ws = try JSONSerialization.jsonObject(with: message.jsonData()) as! [String: Any]
        #expect(NSArray(array: object["detections"] as! [Any]).isEqual(to: ws["detections"] as! [Any]))
        #expect(object["capturedAt"] as? Double == ws["capturedAt"] as? Double)
        // Same encoder settings as /ws (slashes unescaped). Foundation's key order is not
        // stable from one encode to the next, so the objects are compared, not the bytes.
        #expect(SEIBoxes.Payload(frame: ProcessedFrame(seq: 1234, capturedAt: 1763802000.123, capturedNanos: 0,
                                                           width: 640, height: 480, jpeg: Data(),
                                                           detections: [Self.face, Self.logo])) == payload)
    }

    @Test("found in an access unit among other SEI messages and units")
    func foundInAccessUnit() throws {
        let payload = SEIBoxes.Payload(seq: 5, capturedAt: 2.5, width: 320, height: 240, detections: [Self.logo])
        // An SEI with two messages (a recovery point, then someone else's user data) before ours.
        let other: [UInt8] = [0x06, 0x06, 0x01, 0xc4, 0x05, 0x11] + Array(repeating: 0x22, count: 17) + [0x80]
        var au = Data([0, 0, 0, 1, 0x67, 0x64, 0x00, 0x1e, 0, 0, 0, 1, 0x68, 0xeb, 0, 0, 0, 1] + other)
        au += Data([0, 0, 1, 0x65, 0x88, 0x80])
        #expect(SEIBoxes.messages(inSEI: Data(other)).map(\.type) == [6, 5])
        #expect(SEIBoxes.userData(in: au) == nil)
        let bound = try #require(AnnexB.inserting(try SEIBoxes.nalUnit(for: payload), beforeFirstSliceOf: au))
        #expect(try SEIBoxes.payload(in: bound) == payload)
    }

    @Test("damaged units give what they can, never crash",
          arguments: [[], [0x06], [0x06, 0x80], [0x06, 0x05], [0x06, 0x05, 0xFF], [0x06, 0x05, 0x20, 0x1c], [0x65, 0x05, 0x01, 0x00]]
              as [[UInt8]])
    func damaged(unit: [UInt8]) {
        #expect(SEIBoxes.userData(inSEI: Data(unit)) == nil)
    }
}
