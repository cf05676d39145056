import Foundation
import Testing
@testable import SightlineVision

@Suite("Template upload checks")
struct ImageUploadTests {
    /// A PNG signature and IHDR claiming `width` x `height`, then bytes that are no PNG at all.
    static func pngHeaderOnly(width: Int, height: Int) -> Data {
        func be32(_ v: Int) -> [UInt8] { [UInt8(v >> 24 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        return Data(ImageUpload.pngSignature + be32(13) + Array("IHDR".utf8) + be32(width) + be32(height)
                    + [UInt8](repeating: 0x5A, count: 64))
    }

    @Test("an image larger than the frame is refused from its header, before any decoding")
    func largerThanFrameBeforeDecode() {
        let data = Self.pngHeaderOnly(width: 1000, height: 300)
        #expect(throws: ImageUpload.Rejection.self) { try ImageUpload.decode(data, fitting: (640, 480)) }
        do {
            _ = try ImageUpload.decode(data, fitting: (640, 480))
        } catch let rejection as ImageUpload.Rejection {
            #expect(rejection.status == 422 && rejection.error == "template larger than the frame", "\(rejection)")
        } catch {
            Issue.record("unexpected \(error)")
        }
        // Without a frame to fit, the same bytes reach the decoder's checks and are refused as broken.
        do {
            _ = try ImageUpload.decode(data)
            Issue.record("a header without pixels decoded")
        } catch let rejection as ImageUpload.Rejection {
            #expect(rejection.error != "template larger than the frame", "\(rejection)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("an image that fits the frame decodes")
    func fitsFrame() throws {
        let image = ImageBuffer(width: 40, height: 30, channels: 3)
        try ImageOps.addNoise(image, seed: 3, sigma: 40)
        let decoded = try ImageUpload.decode(try ImageIO.encode(image, as: ".png"), fitting: (640, 480))
        #expect(decoded.width == 40 && decoded.height == 30)
    }
}
