import CSightlineOpenCV

/// Pixel operations used by the sources and stages, each a call into the shim.
public enum ImageOps {
    public enum Interpolation: Int32, Sendable { case nearest = 0, linear = 1, area = 3 }

    /// Resizes src into a new buffer of the given size.
    public static func resized(_ src: ImageBuffer, width: Int, height: Int,
                               interpolation: Interpolation = .area) throws -> ImageBuffer {
        let dst = ImageBuffer(width: width, height: height, channels: src.channels)
        try OpenCVError.check { slcv_resize(src.cView, dst.cView, interpolation.rawValue, $0) }
        return dst
    }

    /// Resizes src into a view (for example a rectangle of a larger image).
    public static func resize(_ src: slcv_image, into dst: slcv_image,
                              interpolation: Interpolation = .area) throws {
        try OpenCVError.check { slcv_resize(src, dst, interpolation.rawValue, $0) }
    }

    public static func gray(_ src: ImageBuffer) throws -> ImageBuffer {
        if src.channels == 1 { return src }
        let dst = ImageBuffer(width: src.width, height: src.height, channels: 1)
        try OpenCVError.check { slcv_bgr_to_gray(src.cView, dst.cView, $0) }
        return dst
    }

    public static func addNoise(_ image: ImageBuffer, seed: UInt64, sigma: Double) throws {
        try OpenCVError.check { slcv_add_noise(image.cView, seed, sigma, $0) }
    }

    /// image = saturate(image + plus - minus), per byte.
    public static func addSigned(_ image: ImageBuffer, plus: ImageBuffer, minus: ImageBuffer) throws {
        try OpenCVError.check { slcv_add_signed(image.cView, plus.cView, minus.cView, $0) }
    }

    public static func blur(_ image: ImageBuffer, kernel: Int, sigma: Double = 0) throws {
        try OpenCVError.check { slcv_blur(image.cView, Int32(kernel), sigma, $0) }
    }

    /// Rotated copy about the centre, clockwise positive in image coordinates.
    public static func rotated(_ src: ImageBuffer, clockwiseDegrees: Double) throws -> ImageBuffer {
        let dst = ImageBuffer(width: src.width, height: src.height, channels: src.channels)
        try OpenCVError.check { slcv_rotate(src.cView, dst.cView, -clockwiseDegrees, $0) }
        return dst
    }

    /// Draws `src` onto `dst`, scaled and rotated (clockwise positive) about
    /// its centre, which lands at (centerX, centerY).
    public static func paste(_ src: ImageBuffer, onto dst: ImageBuffer, centerX: Double, centerY: Double,
                             scale: Double, clockwiseDegrees: Double) throws {
        try OpenCVError.check {
            slcv_paste_warped(src.cView, dst.cView, centerX, centerY, scale, -clockwiseDegrees, $0)
        }
    }

    public static func meanStdDev(_ image: ImageBuffer) throws -> (mean: Double, stddev: Double) {
        var mean = 0.0, stddev = 0.0
        try OpenCVError.check { slcv_mean_stddev(image.cView, &mean, &stddev, $0) }
        return (mean, stddev)
    }
}
