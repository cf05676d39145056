import CSightlineOpenCV
import Foundation
import SightlineSupport

/// Reading and writing image files and bytes: PNG through libpng
/// (`PNGCodec`), JPEG through TurboJPEG, any other format OpenCV reads
/// (BMP, WebP, TIFF, ...) through OpenCV's imgcodecs. Only that last
/// case starts imgcodecs, and with it GDAL's drivers (see `PNGCodec`).
public enum ImageIO {
    /// Decodes bytes to BGR (channels 3) or gray (channels 1).
    public static func decode(_ data: Data, channels: Int = 3) throws -> ImageBuffer {
        if PNGCodec.isPNG(data) { return try PNGCodec.decode(data, channels: channels) }
        if data.starts(with: [0xFF, 0xD8, 0xFF]) { return try JPEGDecoder().decodeFile(data, channels: channels) }
        return try openCVDecode(data, channels: channels)
    }

    /// Any format OpenCV's imgcodecs reads.
    static func openCVDecode(_ data: Data, channels: Int) throws -> ImageBuffer {
        try data.withUnsafeBytes { raw in
            try takeMat { out, err in
                slcv_decode(raw.bindMemory(to: UInt8.self).baseAddress, raw.count, Int32(channels), out, err)
            }
        }
    }

    public static func read(path: String, channels: Int = 3) throws -> ImageBuffer {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ImageFileError(message: "the image \(path) could not be read: \(error.localizedDescription)")
        }
        return try decode(data, channels: channels)
    }

    /// Writes by the path's extension (.png, .jpg, or any OpenCV writes).
    public static func write(_ image: ImageBuffer, path: String) throws {
        let data = try encode(image, as: "." + (path as NSString).pathExtension)
        do {
            try data.write(to: URL(fileURLWithPath: path))
        } catch {
            throw ImageFileError(message: "the image \(path) could not be written: \(error.localizedDescription)")
        }
    }

    /// The image encoded in memory, by extension (".png", ".jpg", or any OpenCV writes).
    public static func encode(_ image: ImageBuffer, as fileExtension: String = ".png") throws -> Data {
        switch fileExtension.lowercased() {
        case ".png": return try PNGCodec.encode(image)
        case ".jpg", ".jpeg": return try JPEGEncoder(quality: openCVJPEGQuality).encode(image)
        default: break
        }
        var mat: OpaquePointer?
        try OpenCVError.check { slcv_encode(fileExtension, image.cView, &mat, $0) }
        guard let mat else { throw OpenCVError(code: -1, message: "no bytes returned") }
        defer { slcv_mat_release(mat) }
        let view = slcv_mat_view(mat)
        return Data(bytes: view.data, count: Int(view.width) * Int(view.height))
    }

    /// OpenCV's default JPEG quality, kept for files written as .jpg.
    static let openCVJPEGQuality = 95

    private static func takeMat(
        _ body: (UnsafeMutablePointer<OpaquePointer?>, UnsafeMutablePointer<slcv_error>) -> Int32
    ) throws -> ImageBuffer {
        var mat: OpaquePointer?
        try OpenCVError.check { body(&mat, $0) }
        guard let mat else { throw OpenCVError(code: -1, message: "no image returned") }
        defer { slcv_mat_release(mat) }
        return ImageBuffer(copying: slcv_mat_view(mat))
    }
}
