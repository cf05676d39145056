import CSightlineOpenCV
import Foundation

/// Reading and writing image files and bytes through the OpenCV shim.
public enum ImageIO {
    /// Decodes bytes to BGR (channels 3) or gray (channels 1).
    public static func decode(_ data: Data, channels: Int = 3) throws -> ImageBuffer {
        try data.withUnsafeBytes { raw in
            try takeMat { out, err in
                slcv_decode(raw.bindMemory(to: UInt8.self).baseAddress, raw.count, Int32(channels), out, err)
            }
        }
    }

    public static func read(path: String, channels: Int = 3) throws -> ImageBuffer {
        try takeMat { out, err in slcv_imread(path, Int32(channels), out, err) }
    }

    /// Writes by the path's extension (.png, .jpg).
    public static func write(_ image: ImageBuffer, path: String) throws {
        try OpenCVError.check { slcv_imwrite(path, image.cView, $0) }
    }

    /// The image encoded in memory, by extension (".png", ".jpg").
    public static func encode(_ image: ImageBuffer, as fileExtension: String = ".png") throws -> Data {
        var mat: OpaquePointer?
        try OpenCVError.check { slcv_encode(fileExtension, image.cView, &mat, $0) }
        guard let mat else { throw OpenCVError(code: -1, message: "no bytes returned") }
        defer { slcv_mat_release(mat) }
        let view = slcv_mat_view(mat)
        return Data(bytes: view.data, count: Int(view.width) * Int(view.height))
    }

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
