import Foundation
import Testing
@testable import SightlinePipeline

@Suite("Video: Annex B")
struct VideoAnnexBTests {
    // A made-up access unit: AUD (4-byte start code), SPS (3-byte), PPS,
    // SEI, IDR slice with trailing zero bytes, a second slice.
    static let sps: [UInt8] = [0x67, 0x64, 0x00, 0x1f, 0xac, 0xd9, 0x40]
    static let unit: [UInt8] = [0, 0, 0, 1, 0x09, 0xf0,
                                0, 0, 1] + sps
        + [0, 0, 0, 1, 0x68, 0xeb, 0xe3, 0xcb,
           0, 0, 1, 0x06, 0x05, 0x01, 0xaa, 0x80,
           0, 0, 0, 1, 0x65, 0x88, 0x84, 0x00, 0x00, 0x03, 0x01, 0x20, 0x00, 0x00,
           0, 0, 1, 0x65, 0x11, 0x22]

    @Test("splits on 3- and 4-byte start codes, drops trailing zeros, reads the types")
    func splitsUnits() {
        let data = Data(Self.unit)
        let units = AnnexB.units(in: data)
        #expect(units.map(\.type) == [9, 7, 8, 6, 5, 5])
        #expect(units[0].startCodeOffset == 0 && units[0].range == 4..<6)
        #expect(units[1].startCodeOffset == 6 && units[1].range == 9..<16)
        #expect(Array(units[1].bytes(in: data)) == Self.sps)
        #expect(units[2].startCodeOffset == 16)   // four bytes: the zero belongs to the start code
        // The IDR keeps its escaped bytes and loses its two trailing zeros.
        #expect(Array(units[4].bytes(in: data)) == [0x65, 0x88, 0x84, 0x00, 0x00, 0x03, 0x01, 0x20])
        #expect(Array(units[5].bytes(in: data)) == [0x65, 0x11, 0x22])
    }

    @Test("offsets hold for a Data slice that does not start at index 0")
    func slices() {
        let padded = Data([0xAB, 0xCD] + Self.unit)
        let data = padded[2...]
        let units = AnnexB.units(in: data)
        #expect(units.count == 6)
        #expect(Array(units[1].bytes(in: data)) == Self.sps)
        #expect(AnnexB.codecString(in: data) == "avc1.64001f")
    }

    @Test("codec string from SPS bytes 1 to 3")
    func codecString() {
        #expect(AnnexB.codecString(sps: Data(Self.sps)) == "avc1.64001f")
        #expect(AnnexB.codecString(sps: Data([0x67, 0x42, 0xe0, 0x1e, 0x01])) == "avc1.42e01e")
        #expect(AnnexB.codecString(sps: Data([0x68, 0x42, 0xe0, 0x1e])) == nil)   // a PPS
        #expect(AnnexB.codecString(in: Data([0, 0, 1, 0x65, 0x01])) == nil)
    }

    @Test("inserts before the first slice, after AUD, SPS, PPS and SEI")
    func insertsBeforeFirstSlice() throws {
        let sei: [UInt8] = [0x06, 0x05, 0x02, 0xbb, 0xcc, 0x80]
        let data = try #require(AnnexB.inserting(Data(sei), beforeFirstSliceOf: Data(Self.unit)))
        let units = AnnexB.units(in: data)
        #expect(units.map(\.type) == [9, 7, 8, 6, 6, 5, 5])
        #expect(Array(units[4].bytes(in: data)) == sei)
        #expect(Array(data[units[4].startCodeOffset..<units[4].range.lowerBound]) == [0, 0, 0, 1])
        // Everything else is byte for byte where it was.
        #expect(Array(data.prefix(units[4].startCodeOffset)) == Array(Self.unit.prefix(units[4].startCodeOffset)))
        #expect(Array(data[units[4].range.upperBound...]) == Array(Self.unit[units[4].startCodeOffset...]))
        #expect(AnnexB.inserting(Data(sei), beforeFirstSliceOf: Data([0, 0, 1, 0x67, 0x64])) == nil)
    }

    // Each RBSP ends in its stop bit (0x80), as every real one does.
    @Test("emulation prevention: 03 after every 00 00 before 00-03, and removed again",
          arguments: [
              ([0x00, 0x00, 0x00, 0x80], [0x00, 0x00, 0x03, 0x00, 0x80]),
              ([0x00, 0x00, 0x01, 0x80], [0x00, 0x00, 0x03, 0x01, 0x80]),
              ([0x00, 0x00, 0x02, 0x80], [0x00, 0x00, 0x03, 0x02, 0x80]),
              ([0x00, 0x00, 0x03, 0x80], [0x00, 0x00, 0x03, 0x03, 0x80]),
              ([0x00, 0x00, 0x04, 0x80], [0x00, 0x00, 0x04, 0x80]),
              ([0x00, 0x00, 0x00, 0x00, 0x00, 0x80], [0x00, 0x00, 0x03, 0x00, 0x00, 0x03, 0x00, 0x80]),
              ([0x01, 0x00, 0x00, 0x80], [0x01, 0x00, 0x00, 0x80]),
              ([0x00, 0x01, 0x00, 0x00, 0x01, 0x00, 0x80], [0x00, 0x01, 0x00, 0x00, 0x03, 0x01, 0x00, 0x80]),
          ] as [([UInt8], [UInt8])])
    func emulationPrevention(rbsp: [UInt8], escaped: [UInt8]) {
        let out = AnnexB.addingEmulationPrevention(rbsp)
        #expect(Array(out) == escaped)
        #expect(Array(AnnexB.removingEmulationPrevention(out)) == rbsp)
    }

    @Test("an RBSP ending in a zero gets a final 03, so the zero is not taken for stream padding")
    func finalZero() {
        #expect(Array(AnnexB.addingEmulationPrevention([0x80, 0x00])) == [0x80, 0x00, 0x03])
        #expect(Array(AnnexB.addingEmulationPrevention([0x80, 0x00, 0x00])) == [0x80, 0x00, 0x00, 0x03])
        #expect(Array(AnnexB.removingEmulationPrevention([0x80, 0x00, 0x00, 0x03])) == [0x80, 0x00, 0x00])
    }

    @Test("no start code survives escaping, for every pair of bytes after 00 00")
    func noStartCodeAfterEscaping() {
        var rbsp: [UInt8] = []
        for a in 0...4 { for b in 0...4 { rbsp += [0, 0, UInt8(a), 0, 0, UInt8(b), 0x80] } }
        let escaped = Data([0x06]) + AnnexB.addingEmulationPrevention(rbsp)
        #expect(AnnexB.units(in: Data([0, 0, 0, 1]) + escaped).count == 1)
        #expect(Array(AnnexB.removingEmulationPrevention(escaped.dropFirst())) == rbsp)
    }
}
