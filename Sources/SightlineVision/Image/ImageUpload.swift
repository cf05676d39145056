import CSightlineOpenCV
import Foundation
import SightlineSupport

/// Checks and decodes an uploaded image. The format is decided by magic
/// number before any decoder runs, so only the JPEG and PNG decoders are
/// ever reached (never TIFF, EXR, JPEG 2000, ...); the size is read from
/// the header before the pixels are decoded; truncated or corrupt files are
/// refused rather than half-decoded.
public enum ImageUpload {
    public enum Format: String, Sendable { case jpeg, png }

    public static let maximumSide = 4096
    public static let minimumSide = 8

    public struct Rejection: Error, Equatable, CustomStringConvertible {
        public let status: Int
        public let error: String
        public let detail: String
        public var description: String { "\(status) \(error): \(detail)" }
    }

    static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    public static func format(of data: Data) -> Format? {
        if data.count >= 3, data.prefix(3).elementsEqual([0xFF, 0xD8, 0xFF]) { return .jpeg }
        if data.count >= 8, data.prefix(8).elementsEqual(pngSignature) { return .png }
        return nil
    }

    /// Width and height from the file's header.
    public static func dimensions(of data: Data, format: Format) throws -> (width: Int, height: Int) {
        switch format {
        case .png:
            let bytes = [UInt8](data.prefix(24))
            guard bytes.count == 24, bytes[12..<16].elementsEqual(Array("IHDR".utf8)) else {
                throw corrupt("the PNG header is incomplete")
            }
            func be32(_ at: Int) -> Int { bytes[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
            return (be32(16), be32(20))
        case .jpeg:
            do {
                return try JPEGDecoder().size(of: data)
            } catch {
                throw corrupt("the JPEG header cannot be read: \(error)")
            }
        }
    }

    /// Validates and decodes to BGR. With `frame`, an image larger than the
    /// frame is refused from its header, before any pixel is decoded, so the
    /// largest picture ever decoded is one frame; a PNG whose image data
    /// inflates past its header's size is refused before decoding
    /// (PNGInflateBudget). A JPEG's decode is bounded by its header's size,
    /// which TurboJPEG allocates for, so it needs no such check.
    public static func decode(_ data: Data, fitting frame: (width: Int, height: Int)? = nil) throws -> ImageBuffer {
        guard !data.isEmpty else { throw Rejection(status: 400, error: "empty body", detail: "send a JPEG or PNG image") }
        guard let format = format(of: data) else {
            throw Rejection(status: 415, error: "unsupported image type",
                            detail: "only JPEG and PNG are accepted (checked by the file's first bytes)")
        }
        let (width, height) = try dimensions(of: data, format: format)
        guard width <= maximumSide, height <= maximumSide else {
            throw Rejection(status: 413, error: "image too large",
                            detail: "\(width)x\(height); at most \(maximumSide)x\(maximumSide)")
        }
        guard width >= minimumSide, height >= minimumSide else {
            throw Rejection(status: 422, error: "image too small", detail: "\(width)x\(height); at least \(minimumSide) px each side")
        }
        if let frame, width > frame.width || height > frame.height {
            throw Rejection(status: 422, error: "template larger than the frame",
                            detail: "\(width)x\(height) does not fit in the \(frame.width)x\(frame.height) frame")
        }
        switch format {
        case .jpeg:
            do {
                return try JPEGDecoder().decode(data, strict: true)
            } catch {
                throw corrupt("the JPEG is truncated or corrupt: \(error)")
            }
        case .png:
            guard data.suffix(12).prefix(8).suffix(4).elementsEqual(Array("IEND".utf8)) else {
                throw corrupt("the PNG is truncated (no IEND chunk at its end)")
            }
            try PNGInflateBudget.check(data)
            do {
                return try ImageIO.decode(data)
            } catch {
                throw corrupt("the PNG cannot be decoded: \(error)")
            }
        }
    }

    public static func corrupt(_ detail: String) -> Rejection {
        Rejection(status: 422, error: "corrupt image", detail: detail)
    }
}
