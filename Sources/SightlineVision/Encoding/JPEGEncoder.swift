import CTurboJPEG
import Foundation
import SightlineSupport

public struct JPEGError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public var description: String { "JPEG: \(message)" }

    /// The one place TurboJPEG's status codes become Swift errors.
    static func check(_ status: Int32, _ handle: tjhandle?, warningsAreErrors: Bool = false) throws {
        guard status != 0 else { return }
        let text = tjGetErrorStr2(handle).map { String(cString: $0) } ?? "unknown error"
        // Warnings (tjGetErrorCode == TJERR_WARNING) still produce an image.
        if !warningsAreErrors, let handle, tjGetErrorCode(handle) == Int32(TJERR_WARNING.rawValue) { return }
        throw JPEGError(message: text)
    }
}

/// Encodes BGR or gray frames to JPEG with TurboJPEG, reusing one handle and
/// one output buffer sized for the largest frame seen.
///
/// Ownership: not thread-safe; each encoder belongs to one thread or serial
/// queue (the pipeline's encode stage owns the server's).
public final class JPEGEncoder {
    public let quality: Int
    public let subsampling: TJSAMP
    private let handle: tjhandle
    private var buffer: UnsafeMutablePointer<UInt8>?
    private var capacity: UInt = 0

    public init(quality: Int = 80, subsampling: TJSAMP = TJSAMP_420) throws {
        guard (1...100).contains(quality) else { throw JPEGError(message: "quality must be 1...100, got \(quality)") }
        guard let handle = tjInitCompress() else { throw JPEGError(message: "tjInitCompress failed") }
        self.quality = quality
        self.subsampling = subsampling
        self.handle = handle
    }

    deinit {
        if let buffer { tjFree(buffer) }
        tjDestroy(handle)
    }

    /// The JPEG bytes of the image.
    public func encode(_ image: ImageBuffer) throws -> Data {
        let samp = image.channels == 1 ? TJSAMP_GRAY : subsampling
        let needed = tjBufSize(Int32(image.width), Int32(image.height), Int32(samp.rawValue))
        if needed > capacity {
            if let buffer { tjFree(buffer) }
            buffer = tjAlloc(Int32(needed))
            guard buffer != nil else { throw JPEGError(message: "tjAlloc failed") }
            capacity = needed
        }
        var out: UnsafeMutablePointer<UInt8>? = buffer
        var size: UInt = capacity
        let format = image.channels == 1 ? TJPF_GRAY : (image.channels == 4 ? TJPF_BGRX : TJPF_BGR)
        let status = tjCompress2(handle, image.bytes, Int32(image.width), Int32(image.stride), Int32(image.height),
                                 Int32(format.rawValue), &out, &size, Int32(samp.rawValue), Int32(quality),
                                 TJFLAG_NOREALLOC | TJFLAG_FASTDCT)
        try JPEGError.check(status, handle)
        return Data(bytes: out!, count: Int(size))
    }
}
