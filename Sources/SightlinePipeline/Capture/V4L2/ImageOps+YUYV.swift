import CSightlineOpenCV
import SightlineVision
import SightlineSupport

extension ImageOps {
    /// Converts packed YUYV 4:2:2 (rows `stride` bytes apart, at least
    /// width * 2) into a new BGR buffer.
    public static func bgr(fromYUYV bytes: UnsafeRawPointer, width: Int, height: Int,
                           stride: Int) throws -> ImageBuffer {
        let dst = ImageBuffer(width: width, height: height, channels: 3)
        try OpenCVError.check {
            slcv_yuyv_to_bgr(bytes.assumingMemoryBound(to: UInt8.self), Int32(width), Int32(height),
                             Int32(stride), dst.cView, $0)
        }
        return dst
    }
}
