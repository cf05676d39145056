import CTurboJPEG
import Foundation
import SightlineSupport

/// Decodes JPEG to BGR with TurboJPEG (MJPEG cameras, tests, snapshots).
///
/// Ownership: not thread-safe; one decoder per thread.
public final class JPEGDecoder {
    private let handle: tjhandle

    public init() throws {
        guard let handle = tjInitDecompress() else { throw JPEGError(message: "tjInitDecompress failed") }
        self.handle = handle
    }

    deinit { tjDestroy(handle) }

    /// Width and height from the JPEG header, without decoding the pixels.
    public func size(of jpeg: Data) throws -> (width: Int, height: Int) {
        var width: Int32 = 0, height: Int32 = 0, samp: Int32 = 0, colorspace: Int32 = 0
        let status = jpeg.withUnsafeBytes { raw in
            tjDecompressHeader3(handle, raw.bindMemory(to: UInt8.self).baseAddress, UInt(raw.count),
                                &width, &height, &samp, &colorspace)
        }
        try JPEGError.check(status, handle)
        return (Int(width), Int(height))
    }

    /// Decodes into a new BGR buffer. `strict` refuses what TurboJPEG only
    /// warns about (a truncated file, corrupt data), for uploads.
    public func decode(_ jpeg: Data, strict: Bool = false) throws -> ImageBuffer {
        let (width, height) = try size(of: jpeg)
        guard width > 0, height > 0 else { throw JPEGError(message: "empty image") }
        let image = ImageBuffer(width: width, height: height, channels: 3)
        try decode(jpeg, into: image, strict: strict)
        return image
    }

    /// Decodes a JPEG file to BGR (channels 3) or gray (channels 1) with
    /// libjpeg's accurate defaults (no fast DCT), as OpenCV's imread does.
    public func decodeFile(_ jpeg: Data, channels: Int) throws -> ImageBuffer {
        precondition(channels == 1 || channels == 3)
        let (width, height) = try size(of: jpeg)
        guard width > 0, height > 0 else { throw JPEGError(message: "empty image") }
        let image = ImageBuffer(width: width, height: height, channels: channels)
        let status = jpeg.withUnsafeBytes { raw in
            tjDecompress2(handle, raw.bindMemory(to: UInt8.self).baseAddress, UInt(raw.count), image.bytes,
                          Int32(width), Int32(image.stride), Int32(height),
                          Int32(channels == 1 ? TJPF_GRAY.rawValue : TJPF_BGR.rawValue), 0)
        }
        try JPEGError.check(status, handle)
        return image
    }

    /// Decodes to BGR at the smallest of TurboJPEG's scales (8/8, 7/8 ... 1/8:
    /// the IDCT itself makes the smaller picture, so the pixels it drops are
    /// never computed) that is still at least `width` x `height`; the caller
    /// scales the rest of the way. At full size when no scale is smaller.
    public func decode(_ jpeg: Data, atLeastWidth width: Int, height: Int) throws -> ImageBuffer {
        let (fullWidth, fullHeight) = try size(of: jpeg)
        guard fullWidth > 0, fullHeight > 0 else { throw JPEGError(message: "empty image") }
        var (scaledWidth, scaledHeight) = (fullWidth, fullHeight)
        for factor in Self.scalingFactors {
            let w = Self.scaled(fullWidth, factor), h = Self.scaled(fullHeight, factor)
            if w >= width, h >= height, w * h < scaledWidth * scaledHeight { (scaledWidth, scaledHeight) = (w, h) }
        }
        let image = ImageBuffer(width: scaledWidth, height: scaledHeight, channels: 3, zeroed: false)
        try decode(jpeg, into: image)
        return image
    }

    /// TurboJPEG's scaling factors (num/denom), read once.
    private static let scalingFactors: [(num: Int, denom: Int)] = {
        var count: Int32 = 0
        guard let factors = tjGetScalingFactors(&count), count > 0 else { return [] }
        return (0..<Int(count)).map { (Int(factors[$0].num), Int(factors[$0].denom)) }
    }()

    /// TJSCALED: a dimension at a scaling factor, rounded up as the IDCT does.
    private static func scaled(_ dimension: Int, _ factor: (num: Int, denom: Int)) -> Int {
        (dimension * factor.num + factor.denom - 1) / factor.denom
    }

    /// Decodes into an existing BGR buffer of the JPEG's size, or of one of
    /// its scaled sizes (`decode(_:atLeastWidth:height:)`).
    public func decode(_ jpeg: Data, into image: ImageBuffer, strict: Bool = false) throws {
        let status = jpeg.withUnsafeBytes { raw in
            tjDecompress2(handle, raw.bindMemory(to: UInt8.self).baseAddress, UInt(raw.count), image.bytes,
                          Int32(image.width), Int32(image.stride), Int32(image.height),
                          Int32(TJPF_BGR.rawValue), TJFLAG_FASTDCT | (strict ? TJFLAG_STOPONWARNING : 0))
        }
        try JPEGError.check(status, handle, warningsAreErrors: strict)
    }
}
