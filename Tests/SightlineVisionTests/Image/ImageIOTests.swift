import Foundation
import Testing
@testable import SightlineVision
import SightlineTesting

/// PNG through libpng, JPEG through TurboJPEG, the rest through OpenCV:
/// the same pixels either way.
@Suite("Image files")
struct ImageIOTests {
    static func gradient(channels: Int) -> ImageBuffer {
        let image = ImageBuffer(width: 37, height: 21, channels: channels)
        for y in 0..<image.height {
            for x in 0..<image.width * channels { image.bytes[y * image.stride + x] = UInt8((x * 7 + y * 13) % 256) }
        }
        return image
    }

    static func same(_ a: ImageBuffer, _ b: ImageBuffer) -> Bool {
        guard a.width == b.width, a.height == b.height, a.channels == b.channels else { return false }
        return (0..<a.height).allSatisfy { y in
            (0..<a.width * a.channels).allSatisfy { a.bytes[y * a.stride + $0] == b.bytes[y * b.stride + $0] }
        }
    }

    @Test("PNG round trip, BGR and gray, pixel for pixel", arguments: [1, 3])
    func pngRoundTrip(channels: Int) throws {
        let image = Self.gradient(channels: channels)
        let data = try ImageIO.encode(image, as: ".png")
        #expect(PNGCodec.isPNG(data))
        #expect(Self.same(try ImageIO.decode(data, channels: channels), image))
    }

    @Test("other formats go through OpenCV: a BMP of the same pixels decodes the same")
    func otherFormatsGoThroughOpenCV() throws {
        let image = Self.gradient(channels: 3)
        let bmp = try ImageIO.encode(image, as: ".bmp")
        #expect(bmp.starts(with: Array("BM".utf8)))
        #expect(Self.same(try ImageIO.decode(bmp), image))
    }

    @Test("palette, 16-bit gray and alpha PNGs (made by Pillow) come out as 8-bit BGR, alpha dropped")
    func pngKinds() throws {
        // 4x3, 2-bit palette red, green, blue; pixel (1, 0) is green.
        let palette = try #require(Data(base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAQAAAADAgMAAADJmkZVAAAADFBMVEX/AAAA/wAAAP8AAAD7vkbkAAAADklEQVR4nGOQYPJkUgUAAYoAi6mnULMAAAAASUVORK5CYII="))
        let p = try ImageIO.decode(palette)
        #expect(p.width == 4 && p.height == 3 && p.channels == 3)
        #expect([p.bytes[3], p.bytes[4], p.bytes[5]] == [0, 255, 0])
        #expect([p.bytes[0], p.bytes[1], p.bytes[2]] == [0, 0, 255], "red, in BGR order")
        // 2x1 RGBA: (10, 20, 30) fully transparent, (40, 50, 60) opaque: colours kept as stored.
        let rgba = try #require(Data(base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAYAAAD0In+KAAAAEUlEQVR4nGPkEpFjkJOT+w8AA68Bl/LMqe4AAAAASUVORK5CYII="))
        let a = try ImageIO.decode(rgba)
        #expect((0..<6).map { a.bytes[$0] } == [30, 20, 10, 60, 50, 40])
        // 2x1 16-bit gray: black and white.
        let g16 = try #require(Data(base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAIAAAABEAAAAACB2fwVAAAADUlEQVR4nGNgYPj/HwADAgH/5ncLrgAAAABJRU5ErkJggg=="))
        let g = try ImageIO.decode(g16, channels: 1)
        #expect(g.channels == 1 && g.bytes[0] == 0 && g.bytes[1] == 255)
    }

    @Test("a broken PNG, a broken JPEG and a missing file are errors that say so")
    func brokenFiles() throws {
        var png = try ImageIO.encode(Self.gradient(channels: 3), as: ".png")
        png = png.prefix(png.count / 2)
        #expect(throws: ImageFileError.self) { try ImageIO.decode(png) }
        #expect(throws: JPEGError.self) { try ImageIO.decode(Data([0xFF, 0xD8, 0xFF, 0xE0, 0, 0])) }
        let missing = "/nonexistent/\(UUID().uuidString).png"
        #expect { try ImageIO.read(path: missing) } throws: { "\($0)".contains(missing) }
    }

    @Test("JPEG and PNG files decode to the pixels OpenCV's imgcodecs gives (the shared photos, BGR and gray)",
          arguments: ["grace_hopper.jpg", "messi5.jpg"])
    func sameAsOpenCV(file: String) throws {
        let jpeg = try #require(FileManager.default.contents(atPath: FaceTestData.faces + "/" + file))
        for channels in [3, 1] {
            #expect(Self.same(try ImageIO.decode(jpeg, channels: channels), try ImageIO.openCVDecode(jpeg, channels: channels)))
        }
        let png = try ImageIO.encode(try ImageIO.decode(jpeg), as: ".png")
        #expect(Self.same(try ImageIO.decode(png), try ImageIO.openCVDecode(png, channels: 3)))
        // Written as .jpg and read back: the same size, close to the photo (quality 95).
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(UUID().uuidString).jpg").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let photo = try ImageIO.decode(jpeg)
        try ImageIO.write(photo, path: path)
        let again = try ImageIO.read(path: path)
        #expect(again.width == photo.width && again.height == photo.height)
    }
}
