import Foundation
import Testing
@testable import SightlinePipeline
import SightlineVision

/// The hand-written wire JSON (`WireJSONWriter`) against JSONEncoder's
/// (`WireJSON.encoder()`), which it replaced: the same values, field by field.
@Suite struct WireJSONWriterTests {
    /// A small deterministic generator, so a failure can be replayed.
    struct Generator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return state >> 11
        }
        mutating func unit() -> Double { Double(next() % 1_000_000) / 1_000_000 }
        mutating func chance() -> Bool { next() % 2 == 0 }
        mutating func maybe(_ value: Double) -> Double? { chance() ? value : nil }
    }

    /// Names a user may give a face or a template: quotes, backslashes,
    /// slashes, control characters, accents, CJK and emoji.
    static let names = ["Ada", "O'Brien \"Bob\"", "back\\slash/and/slash", "line\nbreak\ttab\r", "bell\u{07}\u{1F}",
                        "Zoë Ñúñez", "山田太郎", "🙂 smile", "", "\u{2028}sep"]

    static func detection(_ g: inout Generator, index: Int) -> Detection {
        let face = g.chance()
        var landmarks: [String: [Double]]?
        if face && g.chance() {
            landmarks = ["rightEye": [g.unit(), g.unit()], "leftEye": [g.unit(), g.unit()], "nose": [g.unit(), g.unit()]]
        }
        return Detection(kind: face ? .face : .template, id: face ? Int(g.next() % 1000) : nil,
                         label: face ? nil : names[index % names.count], score: g.unit(),
                         box: NormalizedBox(x: g.unit(), y: g.unit(), w: g.unit(), h: g.unit()),
                         scale: face ? nil : g.unit() * 3, angle: face ? nil : g.unit() * 360 - 180,
                         roll: face ? g.maybe(g.unit() * 180 - 90) : nil, yaw: face ? g.maybe(-12.5) : nil,
                         landmarks: landmarks, name: face && g.chance() ? names[(index + 3) % names.count] : nil,
                         nameConfidence: face ? g.maybe(g.unit()) : nil, smile: face ? g.maybe(g.unit()) : nil,
                         eyesClosed: face && g.chance() ? g.chance() : nil)
    }

    static func message(_ g: inout Generator, index: Int) -> FrameMessage {
        var message = FrameMessage(seq: g.next(), capturedAt: 1_764_000_000 + g.unit() * 1000,
                                   width: 1920, height: 1080, jpegBytes: g.chance() ? Int(g.next() % 500_000) : nil,
                                   detections: (0..<Int(g.next() % 5)).map { detection(&g, index: index + $0) })
        if message.jpegBytes == nil {
            message.video = VideoAccessUnit.Info(key: g.chance(), bytes: Int(g.next() % 90_000),
                                                 codec: g.chance() ? "avc1.4d4028" : nil)
        }
        if g.chance() { message.boxesFrom = message.seq - 1 }
        if g.chance() {
            message.groundTruth = [FrameMessage.Truth(label: "face", box: NormalizedBox(x: 0.1, y: 0.2, w: 0.3, h: 0.4),
                                                      roll: g.maybe(12.5))]
        }
        return message
    }

    static func object(_ data: Data) throws -> NSDictionary {
        try #require(try JSONSerialization.jsonObject(with: data) as? NSDictionary)
    }

    @Test("frame messages read back as JSONEncoder's do, and decode to what was written")
    func frameMessagesMatchJSONEncoder() throws {
        var g = Generator(state: 41)
        for index in 0..<300 {
            let message = Self.message(&g, index: index)
            let written = try message.jsonData()
            let encoded = try WireJSON.encoder().encode(message)
            #expect(try Self.object(written) == Self.object(encoded), "message \(index)")
            let decoded = try JSONDecoder().decode(FrameMessage.self, from: written)
            #expect(decoded.detections == message.detections && decoded.seq == message.seq
                    && decoded.capturedAt == message.capturedAt && decoded.video == message.video
                    && decoded.boxesFrom == message.boxesFrom && decoded.groundTruth == message.groundTruth
                    && decoded.jpegBytes == message.jpegBytes)
        }
    }

    @Test("the SEI's payload reads back as JSONEncoder's does, its detections as the frame message writes them")
    func seiPayloadsMatchJSONEncoder() throws {
        var g = Generator(state: 39)
        for index in 0..<100 {
            let message = Self.message(&g, index: index)
            let payload = SEIBoxes.Payload(seq: message.seq, capturedAt: message.capturedAt, width: message.width,
                                           height: message.height, detections: message.detections,
                                           boxesFrom: message.boxesFrom)
            let written = try payload.jsonData()
            #expect(try Self.object(written) == Self.object(WireJSON.encoder().encode(payload)))
            #expect(try JSONDecoder().decode(SEIBoxes.Payload.self, from: written) == payload)
            // The detections' bytes are the frame message's.
            var fromMessage = WireJSONWriter(), fromPayload = WireJSONWriter()
            try fromMessage.detections(message.detections)
            try fromPayload.detections(payload.detections)
            #expect(fromMessage.bytes == fromPayload.bytes)
        }
    }

    @Test("text is escaped as JSON needs and slashes are not; a number JSON cannot hold is refused")
    func escapingAndRefusals() throws {
        var writer = WireJSONWriter()
        writer.openObject()
        writer.key("name"); writer.string("a\"b\\c/d\ne\u{01}")
        writer.closeObject()
        #expect(String(decoding: writer.bytes, as: UTF8.self) == #"{"name":"a\"b\\c/d\ne\u0001"}"#)
        let bad = FrameMessage(seq: 1, capturedAt: .nan, width: 640, height: 480, jpegBytes: 10, detections: [])
        #expect(throws: WireJSONWriter.InvalidNumber.self) { try bad.jsonData() }
        let badBox = Detection(kind: .face, score: 0.9, box: NormalizedBox(x: .infinity, y: 0, w: 0.1, h: 0.1))
        #expect(throws: WireJSONWriter.InvalidNumber.self) {
            try FrameMessage(seq: 1, capturedAt: 1, width: 640, height: 480, jpegBytes: 10, detections: [badBox]).jsonData()
        }
    }
}
