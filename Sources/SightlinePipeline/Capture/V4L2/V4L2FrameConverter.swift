import CSightlineOpenCV
import Foundation
import SightlineVision
import SightlineSupport

/// Turns the bytes of one dequeued buffer into a frame's picture: YUYV through
/// the OpenCV shim and BGR24 by copying rows, at once; MJPEG/JPEG kept as
/// the JPEG (a copy) and decoded by TurboJPEG only when and at the size it is
/// asked for (`JPEGPicture`: a 1080p frame analysed at 640 is decoded at
/// half size by the IDCT, 1.5 ms against 2.8 for the whole picture).
///
/// Ownership: belongs to one V4L2Source and runs on its capture thread.
final class V4L2FrameConverter {
    /// A frame that cannot be turned into an image (short, empty, undecodable).
    struct BadFrame: Error, CustomStringConvertible {
        let description: String
    }

    private var decoder: JPEGDecoder?

    /// The frame in `bytes` as a picture, and its JPEG when it is one; the
    /// bytes are not needed afterwards. A JPEG whose header cannot be read is
    /// a bad frame.
    func picture(from bytes: UnsafeRawBufferPointer, format: V4L2Format) throws -> (FramePicture, jpeg: Data?) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { throw BadFrame(description: "empty frame") }
        switch format.fourCC {
        case .yuyv: return (FramePicture(try yuyvImage(base, count: bytes.count, format: format)), nil)
        case .mjpeg, .jpeg:
            let jpeg = Data(bytes)
            do {
                return (FramePicture(converting: try JPEGPicture(jpeg: jpeg, headerBy: try jpegDecoder())), jpeg)
            } catch let error as JPEGError {
                throw BadFrame(description: "undecodable JPEG frame (\(error.message))")
            }
        case .bgr24: return (FramePicture(try bgrImage(base, count: bytes.count, format: format)), nil)
        default: throw BadFrame(description: "no conversion from \(format.fourCC)")
        }
    }

    private func yuyvImage(_ base: UnsafeRawPointer, count: Int, format: V4L2Format) throws -> ImageBuffer {
        let stride = try checkedStride(count: count, format: format, bytesPerPixel: 2)
        return try ImageOps.bgr(fromYUYV: base, width: format.width, height: format.height, stride: stride)
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
