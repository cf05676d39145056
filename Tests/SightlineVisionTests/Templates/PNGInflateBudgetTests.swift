import CZlib
import Foundation
import Testing
@testable import SightlineSupport
@testable import SightlineVision

@Suite struct PNGInflateBudgetTests {
    static func be32(_ v: Int) -> [UInt8] { [UInt8(v >> 24 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + data
        let crc = body.withUnsafeBufferPointer { CZlib.crc32(0, $0.baseAddress, UInt32($0.count)) }
        return be32(data.count) + body + be32(Int(crc))
    }

    /// A PNG whose IHDR says `width` x `height` 8-bit RGB, whose IDAT is
    /// `zeros` zero bytes deflated in 1 MiB pieces (never held whole).
    static func png(width: Int, height: Int, zeros: Int, interlaced: Bool = false) throws -> Data {
        var stream = z_stream()
        #expect(deflateInit_(&stream, 9, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK)
        defer { deflateEnd(&stream) }
        var compressed: [UInt8] = []
        var input = [UInt8](repeating: 0, count: 1 << 20)
        var output = [UInt8](repeating: 0, count: 1 << 16)
        var left = zeros
        repeat {
            let piece = min(left, input.count)
            left -= piece
            let flush = left == 0 ? Z_FINISH : Z_NO_FLUSH
            input.withUnsafeMutableBufferPointer { inBuffer in
                stream.next_in = inBuffer.baseAddress
                stream.avail_in = UInt32(piece)
                repeat {
                    output.withUnsafeMutableBufferPointer { outBuffer in
                        stream.next_out = outBuffer.baseAddress
                        stream.avail_out = UInt32(outBuffer.count)
                        _ = deflate(&stream, flush)
                        compressed += outBuffer.prefix(outBuffer.count - Int(stream.avail_out))
                    }
                } while stream.avail_out == 0
            }
        } while left > 0
        let ihdr = be32(width) + be32(height) + [8, 2, 0, 0, interlaced ? 1 : 0]
        return Data(ImageUpload.pngSignature + chunk("IHDR", ihdr) + chunk("IDAT", compressed) + chunk("IEND", []))
    }

    @Test func aBombIsRefusedUnreadAndQuickly() throws {
        // 600x450 RGB inflates to 450 * (1 + 1800) = 810,450 bytes; this IDAT holds 256 MiB.
        let bomb = try Self.png(width: 600, height: 450, zeros: 256 << 20)
        #expect(bomb.count < 512 << 10)
        let start = MonotonicClock.nanos()
        #expect {
            _ = try ImageUpload.decode(bomb, fitting: (640, 480))
        } throws: { error in
            (error as? ImageUpload.Rejection)?.status == 413
        }
        let milliseconds = Double(MonotonicClock.nanos() - start) / 1e6
        print("PNGInflateBudget: refused a \(bomb.count)-byte PNG holding 256 MiB of image data in \(milliseconds) ms")
    }

    @Test func exactDataPassesAndShortDataIsCorrupt() throws {
        try PNGInflateBudget.check(try Self.png(width: 600, height: 450, zeros: 450 * 1801))
        #expect(throws: ImageUpload.Rejection.self) { try PNGInflateBudget.check(try Self.png(width: 600, height: 450, zeros: 1000)) }
        #expect(throws: ImageUpload.Rejection.self) {
            try PNGInflateBudget.check(try Self.png(width: 600, height: 450, zeros: 450 * 1801 + 1))
        }
        // Adam7: 8x8 RGB is 7 passes of rows and filter bytes.
        let interlaced = PNGInflateBudget.Header(width: 8, height: 8, bitDepth: 8, colorType: 2, interlaced: true)
        #expect(try PNGInflateBudget.inflatedSize(interlaced) == 1 * (1 + 3) + 1 * (1 + 3) + 1 * (1 + 6) + 2 * (1 + 6) + 2 * (1 + 12) + 4 * (1 + 12) + 4 * (1 + 24))
    }

    @Test func realEncodersOutputPasses() throws {
        for (width, height, channels) in [(40, 30, 3), (33, 17, 1), (64, 9, 3)] {
            let image = ImageBuffer(width: width, height: height, channels: channels)
            try ImageOps.addNoise(image, seed: 5, sigma: 40)
            let png = try ImageIO.encode(image, as: ".png")
            try PNGInflateBudget.check(png)
            #expect(try ImageUpload.decode(png).width == width)
        }
    }
}

@Test func aHeaderBeyondAnySizeIsRefusedNotOverflowed() throws {
    // The input FuzzUpload found: IHDR 3321888759 x 4294967287, 8-bit grey.
    let data = Data(base64Encoded: "iVBORw0KGgoAAAANSUhEUsX///f////3CAAAAADhZOFXAAAAEElEQVR4nGNkZoAAJgaKGPkDXQCDYSSyXgAAAABJRU5ErkLggg==")!
    #expect(throws: ImageUpload.Rejection.self) { try PNGInflateBudget.check(data) }
}
