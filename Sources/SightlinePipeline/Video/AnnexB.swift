import Foundation
import SightlineSupport

/// H.264 byte streams in Annex B form (ITU-T H.264 Annex B): NAL units
/// each after a start code, 00 00 01 or 00 00 00 01. What the encoder
/// makes, what `/ws?video=h264` sends and what WebCodecs decodes without a
/// `description`. Offsets are counted from the start of the data given.
public enum AnnexB {
    /// nal_unit_type values used here (H.264 Table 7-1).
    public enum UnitType {
        public static let slice: UInt8 = 1
        public static let idr: UInt8 = 5
        public static let sei: UInt8 = 6
        public static let sps: UInt8 = 7
        public static let pps: UInt8 = 8
        public static let accessUnitDelimiter: UInt8 = 9

        /// Coded slice data (types 1 to 5): the picture itself.
        public static func isVCL(_ type: UInt8) -> Bool { (1...5).contains(type) }
    }

    /// One NAL unit found in a byte stream.
    public struct NALUnit: Sendable, Equatable {
        /// The unit's bytes, header first, without the start code or
        /// trailing zero bytes.
        public let range: Range<Int>
        /// Where its start code begins: a unit inserted before this one goes here.
        public let startCodeOffset: Int
        /// nal_unit_type (the header's low five bits).
        public let type: UInt8

        /// The unit's bytes (header first) in `data`, the stream it was found in.
        public func bytes(in data: Data) -> Data {
            data[(data.startIndex + range.lowerBound)..<(data.startIndex + range.upperBound)]
        }
    }

    public static let startCode: [UInt8] = [0, 0, 0, 1]

    /// The SPS and PPS units of a keyframe, each after a 4-byte start code:
    /// what a muxer takes as the stream's extradata.
    public static func parameterSets(of accessUnit: Data) -> Data {
        var sets = Data()
        for unit in units(in: accessUnit) where unit.type == UnitType.sps || unit.type == UnitType.pps {
            sets.append(contentsOf: startCode)
            sets.append(unit.bytes(in: accessUnit))
        }
        return sets
    }

    /// The NAL units of a byte stream, in order. Bytes before the first start code are ignored.
    public static func units(in data: Data) -> [NALUnit] {
        data.withUnsafeBytes { raw -> [NALUnit] in
            let bytes = raw.bindMemory(to: UInt8.self)
            let count = bytes.count
            // (start code's first byte, unit's first byte) for every start code.
            var starts: [(code: Int, unit: Int)] = []
            var i = 0
            while i + 2 < count {
                if bytes[i + 2] > 1 {
                    i += 3   // no start code can begin at i, i+1 or i+2
                } else if bytes[i] == 0 && bytes[i + 1] == 0 && bytes[i + 2] == 1 {
                    starts.append((i > 0 && bytes[i - 1] == 0 ? i - 1 : i, i + 3))
                    i += 3
                } else {
                    i += 1
                }
            }
            var units: [NALUnit] = []
            for (index, start) in starts.enumerated() {
                var end = index + 1 < starts.count ? starts[index + 1].code : count
                while end > start.unit && bytes[end - 1] == 0 { end -= 1 }   // trailing_zero_8bits
                guard end > start.unit else { continue }
                units.append(NALUnit(range: start.unit..<end, startCodeOffset: start.code,
                                     type: bytes[start.unit] & 0x1F))
            }
            return units
        }
    }

    /// The WebCodecs codec string of an SPS unit (header included):
    /// `avc1.PPCCLL`, profile_idc, the constraint flags byte and level_idc
    /// in hex, as RFC 6381 spells it. Nil when it is no SPS.
    public static func codecString(sps unit: Data) -> String? {
        let head = removingEmulationPrevention(unit.prefix(8))
        guard head.count >= 4, head[head.startIndex] & 0x1F == UnitType.sps else { return nil }
        let fields = head.dropFirst().prefix(3)
        return "avc1." + fields.map { String(format: "%02x", $0) }.joined()
    }

    /// The codec string of the first SPS in an access unit (nil when it has none).
    public static func codecString(in accessUnit: Data) -> String? {
        guard let sps = units(in: accessUnit).first(where: { $0.type == UnitType.sps }) else { return nil }
        return codecString(sps: sps.bytes(in: accessUnit))
    }

    /// The access unit with `unit` (a NAL unit, header first, no start code)
    /// inserted, after a four-byte start code, just before its first slice:
    /// after any delimiter, SPS, PPS and SEI the encoder wrote. Nil when
    /// the access unit has no slice.
    public static func inserting(_ unit: Data, beforeFirstSliceOf accessUnit: Data) -> Data? {
        guard let slice = units(in: accessUnit).first(where: { UnitType.isVCL($0.type) }) else { return nil }
        let at = accessUnit.startIndex + slice.startCodeOffset
        var out = Data(capacity: accessUnit.count + startCode.count + unit.count)
        out.append(accessUnit[accessUnit.startIndex..<at])
        out.append(contentsOf: startCode)
        out.append(unit)
        out.append(accessUnit[at...])
        return out
    }

    /// RBSP to the bytes of a NAL unit's payload: 0x03 inserted after every
    /// two zero bytes that a byte of 0x00 to 0x03 follows (and after a
    /// final zero), so no start code can appear inside a unit.
    public static func addingEmulationPrevention<Bytes: Collection<UInt8>>(_ rbsp: Bytes) -> Data {
        var out = Data(capacity: rbsp.count + rbsp.count / 64 + 1)
        var zeros = 0
        for byte in rbsp {
            if zeros >= 2 && byte <= 3 {
                out.append(3)
                zeros = 0
            }
            out.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        if zeros > 0 { out.append(3) }
        return out
    }

    /// The reverse: every 0x03 that follows two zero bytes is dropped.
    public static func removingEmulationPrevention<Bytes: Collection<UInt8>>(_ payload: Bytes) -> Data {
        var out = Data(capacity: payload.count)
        var zeros = 0
        for byte in payload {
            if zeros >= 2 && byte == 3 {
                zeros = 0
                continue
            }
            out.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return out
    }
}
