import CSightlineOpenCV
import Foundation
import SightlineVision
import SightlineSupport

/// Turns the bytes of one dequeued buffer into a new BGR image: YUYV through
/// the OpenCV shim, MJPEG/JPEG through TurboJPEG, BGR24 by copying rows.
///
/// Ownership: belongs to one V4L2Source and runs on its capture thread.
final class V4L2FrameConverter {
    /// A frame that cannot be turned into an image (short, empty, undecodable).
    struct BadFrame: Error, CustomStringConvertible {
        let description: String
    }

    private var decoder: JPEGDecoder?

    /// A BGR copy of the frame in `bytes`; the bytes are not needed afterwards.
    func image(from bytes: UnsafeRawBufferPointer, format: V4L2Format) throws -> ImageBuffer {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { throw BadFrame(description: "empty frame") }
        switch format.fourCC {
        case .yuyv: return try yuyvImage(base, count: bytes.count, format: format)
        case .mjpeg, .jpeg: return try jpegImage(base, count: bytes.count)
        case .bgr24: return try bgrImage(base, count: bytes.count, format: format)
        default: throw BadFrame(description: "no conversion from \(format.fourCC)")
        }
    }

    private func yuyvImage(_ base: UnsafeRawPointer, count: Int, format: V4L2Format) throws -> ImageBuffer {
        let stride = try checkedStride(count: count, format: format, bytesPerPixel: 2)
        return try ImageOps.bgr(fromYUYV: base, width: format.width, height: format.height, stride: stride)
    }

    private func jpegImage(_ base: UnsafeRawPointer, count: Int) throws -> ImageBuffer {
        // The buffer stays mapped and unqueued until this returns, so no copy is needed.
        let jpeg = Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: count, deallocator: .none)
        do {
            return try jpegDecoder().decode(jpeg)
        } catch let error as JPEGError {
            throw BadFrame(description: "undecodable JPEG frame (\(error.message))")
        }
    }

    private func bgrImage(_ base: UnsafeRawPointer, count: Int, format: V4L2Format) throws -> ImageBuffer {
        let stride = try checkedStride(count: count, format: format, bytesPerPixel: 3)
        let view = slcv_image(data: UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: UInt8.self)),
                              width: Int32(format.width), height: Int32(format.height),
                              stride: Int32(stride), channels: 3)
        return ImageBuffer(copying: view)
    }

    /// The row stride of an uncompressed frame, after checking the frame is complete.
    private func checkedStride(count: Int, format: V4L2Format, bytesPerPixel: Int) throws -> Int {
        let rowBytes = format.width * bytesPerPixel
        let stride = max(format.bytesPerLine, rowBytes)
        let needed = stride * (format.height - 1) + rowBytes
        guard count >= needed else {
            throw BadFrame(description: "short \(format.fourCC) frame: \(count) of \(needed) bytes")
        }
        return stride
    }

    private func jpegDecoder() throws -> JPEGDecoder {
        if let decoder { return decoder }
        let made = try JPEGDecoder()
        decoder = made
        return made
    }
}
