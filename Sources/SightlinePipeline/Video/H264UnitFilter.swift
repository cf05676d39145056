import Foundation

/// Makes a camera's H.264 packets into access units any decoder can join
/// at a keyframe, as `/ws?video=h264`, clips and relays need them
/// (DESIGN.md): every IDR carries the SPS and PPS before its slices (added
/// from the container's or the last in-band ones where the camera sent
/// them only once), and nothing goes out between a lost unit and the next
/// IDR, nor before the first, since no decoder could use it.
///
/// A value type owned by the source that reads the stream (its capture thread).
struct H264UnitFilter {
    private var sps: [Data] = []
    private var pps: [Data] = []
    private var waitingForKeyframe = true

    /// `parameterSets`: the container's SPS and PPS, Annex B (may be empty).
    init(parameterSets: Data = Data()) {
        remember(parameterSets)
    }

    /// The stream starts again (a file rewound): wait for its first IDR.
    mutating func restart() {
        waitingForKeyframe = true
    }

    /// The access unit to pass on for `packet`, or nil when none can be.
    /// `lostBefore`: packets before it were lost, so it waits for an IDR.
    mutating func unit(from packet: Data, lostBefore: Bool) -> SourceUnit? {
        if lostBefore { waitingForKeyframe = true }
        let units = AnnexB.units(in: packet)
        guard units.contains(where: { AnnexB.UnitType.isVCL($0.type) }) else { return nil }
        remember(packet, units: units)
        let isIDR = units.contains { $0.type == AnnexB.UnitType.idr }
        guard isIDR else { return waitingForKeyframe ? nil : SourceUnit(codec: .h264, data: packet, isKeyframe: false) }
        let hasSPS = units.contains { $0.type == AnnexB.UnitType.sps }
        let hasPPS = units.contains { $0.type == AnnexB.UnitType.pps }
        var data = packet
        if !hasSPS || !hasPPS {
            guard !sps.isEmpty, !pps.isEmpty else { return nil }
            // After an access unit delimiter if there is one (it must come first), else at the start.
            let at = units.first?.type == AnnexB.UnitType.accessUnitDelimiter && units.count > 1
                ? packet.startIndex + units[1].startCodeOffset : packet.startIndex
            var sets = Data()
            for unit in (hasSPS ? [] : sps) + (hasPPS ? [] : pps) {
                sets.append(contentsOf: AnnexB.startCode)
                sets.append(unit)
            }
            data = packet[packet.startIndex..<at] + sets + packet[at...]
        }
        waitingForKeyframe = false
        return SourceUnit(codec: .h264, data: Data(data), isKeyframe: true)
    }

    private mutating func remember(_ stream: Data, units given: [AnnexB.NALUnit]? = nil) {
        let units = given ?? AnnexB.units(in: stream)
        let newSPS = units.filter { $0.type == AnnexB.UnitType.sps }.map { Data($0.bytes(in: stream)) }
        let newPPS = units.filter { $0.type == AnnexB.UnitType.pps }.map { Data($0.bytes(in: stream)) }
        if !newSPS.isEmpty { sps = newSPS }
        if !newPPS.isEmpty { pps = newPPS }
    }
}

/// JPEGs an MJPEG source can pass on as they are: whole (SOI first), with
/// their Huffman tables. Some UVC cameras leave the tables out (the AVI1
/// form, which assumes the standard ones); browsers cannot show those, so
/// such frames are encoded again instead.
enum MJPEGUnitFilter {
    static func unit(from packet: Data) -> SourceUnit? {
        guard hasHuffmanTables(packet) else { return nil }
        return SourceUnit(codec: .mjpeg, data: packet, isKeyframe: true)
    }

    /// Walks the markers from SOI to SOS looking for a DHT (FFC4).
    static func hasHuffmanTables(_ jpeg: Data) -> Bool {
        jpeg.withUnsafeBytes { raw -> Bool in
            let b = raw.bindMemory(to: UInt8.self)
            guard b.count > 4, b[0] == 0xFF, b[1] == 0xD8 else { return false }
            var i = 2
            while i + 4 <= b.count {
                guard b[i] == 0xFF else { return false }
                let marker = b[i + 1]
                if marker == 0xFF { i += 1; continue }   // fill byte
                if marker == 0xC4 { return true }
                if marker == 0xDA { return false }       // SOS: the tables would have come before it
                let length = Int(b[i + 2]) << 8 | Int(b[i + 3])
                guard length >= 2 else { return false }
                i += 2 + length
            }
            return false
        }
    }
}
