import CPNG
import Foundation
import SightlineSupport

/// PNG to and from BGR or gray buffers with libpng's simplified API
/// (`png_image`), which reads every PNG kind (palette, gray, 16-bit, alpha,
/// interlaced) into 8-bit pixels.
///
/// Sightline reads its own PNGs (templates, the demo's) and users' uploads
/// with it rather than with OpenCV's imgcodecs: the first use of imgcodecs
/// starts GDAL's drivers (Debian's OpenCV is built with GDAL), about 25 MiB
/// of resident memory for a format Sightline never sees.
public enum PNGCodec {
    /// The 8-byte signature every PNG file starts with.
    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    public static func isPNG(_ data: Data) -> Bool { data.starts(with: signature) }

    /// Decodes to BGR (channels 3) or gray (channels 1). An alpha channel is
    /// dropped (the colour values are kept as stored), as OpenCV's
    /// IMREAD_COLOR does.
    public static func decode(_ data: Data, channels: Int = 3) throws -> ImageBuffer {
        precondition(channels == 1 || channels == 3)
        var image = png_image()
        image.version = png_uint_32(PNG_IMAGE_VERSION)
        defer { png_image_free(&image) }
        let begun = data.withUnsafeBytes { raw in
            png_image_begin_read_from_memory(&image, raw.baseAddress, raw.count)
        }
        guard begun != 0 else { throw error(image, "the PNG could not be read") }
        let width = Int(image.width), height = Int(image.height)
        guard width > 0, height > 0 else { throw ImageFileError(message: "the PNG is empty") }
        // With alpha, read it too and drop it below: without, libpng would
        // composite onto black.
        let withAlpha = image.format & png_uint_32(PNG_FORMAT_FLAG_ALPHA) != 0
        let readChannels = channels + (withAlpha ? 1 : 0)
        let gray = withAlpha ? png_uint_32(PNG_FORMAT_GA) : png_uint_32(PNG_FORMAT_GRAY)
        let colour = withAlpha ? png_uint_32(PNG_FORMAT_BGRA) : png_uint_32(PNG_FORMAT_BGR)
        image.format = channels == 1 ? gray : colour
        var pixels = [UInt8](repeating: 0, count: width * height * readChannels)
        let read = try data.withUnsafeBytes { _ in
            try pixels.withUnsafeMutableBytes { out -> Int32 in
                guard let base = out.baseAddress else { throw ImageFileError(message: "the PNG is empty") }
                return png_image_finish_read(&image, nil, base, Int32(width * readChannels), nil)
            }
        }
        guard read != 0 else { throw error(image, "the PNG could not be decoded") }
        let result = ImageBuffer(width: width, height: height, channels: channels)
        pixels.withUnsafeBufferPointer { source in
            for y in 0..<height {
                let row = result.bytes + y * result.stride
                let from = y * width * readChannels
                if readChannels == channels {
                    row.update(from: source.baseAddress! + from, count: width * channels)
                } else {
                    for x in 0..<width {
                        for c in 0..<channels { row[x * channels + c] = source[from + x * readChannels + c] }
                    }
                }
            }
        }
        return result
    }

    /// The PNG bytes of a BGR or gray buffer.
    public static func encode(_ buffer: ImageBuffer) throws -> Data {
        guard buffer.channels == 1 || buffer.channels == 3 else {
            throw ImageFileError(message: "only BGR or gray images can be written as PNG")
        }
        var image = png_image()
        image.version = png_uint_32(PNG_IMAGE_VERSION)
        image.width = png_uint_32(buffer.width)
        image.height = png_uint_32(buffer.height)
        image.format = buffer.channels == 1 ? png_uint_32(PNG_FORMAT_GRAY) : png_uint_32(PNG_FORMAT_BGR)
        defer { png_image_free(&image) }
        var size: png_alloc_size_t = 0
        guard png_image_write_to_memory(&image, nil, &size, 0, buffer.bytes, Int32(buffer.stride), nil) != 0,
              size > 0 else { throw error(image, "the PNG could not be encoded") }
        var data = Data(count: Int(size))
        let written = data.withUnsafeMutableBytes { out in
            png_image_write_to_memory(&image, out.baseAddress, &size, 0, buffer.bytes, Int32(buffer.stride), nil)
        }
        guard written != 0 else { throw error(image, "the PNG could not be encoded") }
        return data.prefix(Int(size))
    }

    private static func error(_ image: png_image, _ what: String) -> ImageFileError {
        let message = withUnsafeBytes(of: image.message) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        return ImageFileError(message: message.isEmpty ? what : "\(what): \(message)")
    }
}
