import CZlib
import Foundation
import SightlineSupport

/// Measures a PNG's image data before any decoder sees it, so a
/// decompression bomb (a small file whose IDAT inflates to gigabytes behind
/// a modest header) is refused without allocating or inflating its size.
///
/// The header's width, height, bit depth, colour type and interlacing say
/// exactly how many bytes the image data inflates to (rows, each with its
/// filter byte, per Adam7 pass when interlaced). The chunks are walked
/// (lengths within the file, IDAT chunks contiguous), and the IDAT stream is
/// inflated through zlib into a small scratch buffer that is overwritten
/// each time: only the count is kept, and inflating stops as soon as it
/// passes what the header allows. Cost: at most one frame's worth of
/// inflation (the size was checked against the frame before), a few ms.
public enum PNGInflateBudget {
    public struct Header: Equatable, Sendable {
        public var width: Int, height: Int, bitDepth: Int, colorType: Int, interlaced: Bool
    }

    /// Throws a `Rejection` when the data does not fit its header.
    public static func check(_ data: Data) throws {
        let bytes = [UInt8](data)
        let (header, idat) = try chunks(bytes)
        let expected = try inflatedSize(header)
        let produced = try inflate(idat, bytes: bytes, limit: expected)
        guard produced <= expected else {
            throw ImageUpload.Rejection(status: 413, error: "image data too large",
                                        detail: "the PNG's compressed data inflates past the \(header.width)x\(header.height) "
                                            + "it declares (\(expected) bytes); it is refused unread")
        }
        guard produced == expected else {
            throw ImageUpload.corrupt("the PNG's image data ends early (\(produced) of \(expected) bytes)")
        }
    }

    /// IHDR and the IDAT chunks' data ranges.
    static func chunks(_ bytes: [UInt8]) throws -> (Header, [Range<Int>]) {
        func be32(_ at: Int) -> Int { bytes[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
        var offset = 8
        var header: Header?
        var idat: [Range<Int>] = []
        var idatEnded = false
        while offset + 12 <= bytes.count {
            let length = be32(offset)
            let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
            let start = offset + 8
            guard length <= bytes.count - start - 4 else { throw ImageUpload.corrupt("the PNG's \(type) chunk runs past the end") }
            switch type {
            case "IHDR":
                guard header == nil, offset == 8, length == 13 else { throw ImageUpload.corrupt("the PNG's IHDR chunk is malformed") }
                header = Header(width: be32(start), height: be32(start + 4), bitDepth: Int(bytes[start + 8]),
                                colorType: Int(bytes[start + 9]), interlaced: bytes[start + 12] == 1)
                guard bytes[start + 12] <= 1 else { throw ImageUpload.corrupt("unknown PNG interlace method") }
            case "IDAT":
                guard !idatEnded else { throw ImageUpload.corrupt("the PNG's IDAT chunks are not contiguous") }
                idat.append(start..<start + length)
            case "IEND":
                guard let header else { throw ImageUpload.corrupt("the PNG has no IHDR chunk") }
                guard !idat.isEmpty else { throw ImageUpload.corrupt("the PNG has no image data") }
                return (header, idat)
            default:
                if !idat.isEmpty { idatEnded = true }
            }
            offset = start + length + 4
        }
        throw ImageUpload.corrupt("the PNG is truncated (no IEND chunk)")
    }

    /// Bytes the image data inflates to, from the header alone.
    static func inflatedSize(_ header: Header) throws -> Int {
        let channels: Int
        switch (header.colorType, header.bitDepth) {
        case (0, 1), (0, 2), (0, 4), (0, 8), (0, 16): channels = 1
        case (2, 8), (2, 16): channels = 3
        case (3, 1), (3, 2), (3, 4), (3, 8): channels = 1
        case (4, 8), (4, 16): channels = 2
        case (6, 8), (6, 16): channels = 4
        default: throw ImageUpload.corrupt("colour type \(header.colorType) with bit depth \(header.bitDepth) is not PNG")
        }
        // PNG allows 2^31-1 a side; nothing here needs more than 2^24, and larger
        // sizes would overflow the byte count below (found by FuzzUpload).
        guard (1...(1 << 24)).contains(header.width), (1...(1 << 24)).contains(header.height) else {
            throw ImageUpload.corrupt("the PNG header declares \(header.width)x\(header.height), which no image here can be")
        }
        let bitsPerPixel = channels * header.bitDepth
        func size(columns: Int, rows: Int) -> Int {
            columns == 0 || rows == 0 ? 0 : rows * (1 + (columns * bitsPerPixel + 7) / 8)
        }
        guard header.interlaced else { return size(columns: header.width, rows: header.height) }
        // Adam7: (x start, y start, x step, y step) of each pass.
        let passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
        return passes.reduce(0) { total, pass in
            let columns = (header.width - pass.0 + pass.2 - 1) / pass.2
            let rows = (header.height - pass.1 + pass.3 - 1) / pass.3
            return total + size(columns: max(0, columns), rows: max(0, rows))
        }
    }

    /// Inflates the IDAT stream, counting output, and stops once it passes
    /// `limit` (returning a count over it) or at the stream's end.
    static func inflate(_ ranges: [Range<Int>], bytes: [UInt8], limit: Int) throws -> Int {
        var stream = z_stream()
        guard inflateInit_(&stream, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw ImageUpload.corrupt("zlib cannot start")
        }
        defer { inflateEnd(&stream) }
        var scratch = [UInt8](repeating: 0, count: 64 << 10)
        var produced = 0
        var ended = false
        try bytes.withUnsafeBufferPointer { input in
            try scratch.withUnsafeMutableBufferPointer { output in
                for range in ranges where !ended {
                    stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress! + range.lowerBound)
                    stream.avail_in = UInt32(range.count)
                    while stream.avail_in > 0 && !ended {
                        stream.next_out = output.baseAddress
                        stream.avail_out = UInt32(output.count)
                        let status = CZlib.inflate(&stream, Z_NO_FLUSH)
                        produced += output.count - Int(stream.avail_out)
                        if produced > limit { ended = true; return }
                        switch status {
                        case Z_STREAM_END: ended = true
                        case Z_OK: continue
                        case Z_BUF_ERROR where stream.avail_in == 0: break
                        default: throw ImageUpload.corrupt("the PNG's image data is not a valid zlib stream")
                        }
                    }
                }
                // Input used up: what remains buffered inside zlib.
                while !ended {
                    stream.next_out = output.baseAddress
                    stream.avail_out = UInt32(output.count)
                    let status = CZlib.inflate(&stream, Z_NO_FLUSH)
                    let made = output.count - Int(stream.avail_out)
                    produced += made
                    if produced > limit || status == Z_STREAM_END || made == 0 { ended = true }
                    if status != Z_OK && status != Z_STREAM_END && status != Z_BUF_ERROR {
                        throw ImageUpload.corrupt("the PNG's image data is not a valid zlib stream")
                    }
                }
            }
        }
        return produced
    }
}
