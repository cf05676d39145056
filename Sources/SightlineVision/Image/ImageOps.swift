import CSightlineOpenCV

/// Pixel operations used by the sources and stages, each a call into the shim.
public enum ImageOps {
    public enum Interpolation: Int32, Sendable { case nearest = 0, linear = 1, area = 3 }

    /// Resizes src into a new buffer of the given size.
    public static func resized(_ src: ImageBuffer, width: Int, height: Int,
                               interpolation: Interpolation = .area) throws -> ImageBuffer {
        let dst = ImageBuffer(width: width, height: height, channels: src.channels, zeroed: false)
        try OpenCVError.check { slcv_resize(src.cView, dst.cView, interpolation.rawValue, $0) }
        return dst
    }

    /// src made smaller cheaply and without aliasing: halved by area
    /// interpolation (each pixel the mean of the 2x2 it covers: OpenCV's fast
    /// path) while still at least twice the size, then brought to the size by
    /// linear interpolation (less than 2x, where its two taps cover every
    /// source pixel). OpenCV's general area path at a factor that is not a
    /// whole number costs several times as much: 1080p to 640x360 0.9 ms
    /// against 3.6; a 640x360 gray picture to 0.7 and 0.175 of it 0.08 ms
    /// against 0.75. src itself when it has the size.
    public static func scaledDown(_ src: ImageBuffer, width: Int, height: Int) throws -> ImageBuffer {
        var current = src
        while current.width >= 2 * width && current.height >= 2 * height {
            current = try resized(current, width: current.width / 2, height: current.height / 2, interpolation: .area)
        }
        if current.width == width && current.height == height { return current }
        return try resized(current, width: width, height: height, interpolation: .linear)
    }

    /// Resizes src into a view (for example a rectangle of a larger image).
    public static func resize(_ src: slcv_image, into dst: slcv_image,
                              interpolation: Interpolation = .area) throws {
        try OpenCVError.check { slcv_resize(src, dst, interpolation.rawValue, $0) }
    }

    /// Shrinks src into dst as area interpolation does, but cheaply on a
    /// large factor: halved by area interpolation (each pixel the mean of the
    /// 2x2 it covers, OpenCV's fast path) while dst is still at most a quarter
    /// of the picture's size, then area interpolation for the rest (2-4x, on
    /// the smaller picture). OpenCV's general area path over the whole factor
    /// costs twice as much on a large frame (1920x1080 into 320x180: 2.3 ms
    /// against 1.1). Below 4x (or growing) it is one plain resize, as before:
    /// a 900-pixel photo fitted into 320 reads exactly as it did.
    public static func shrink(_ src: slcv_image, into dst: slcv_image) throws {
        var current = src
        var kept: ImageBuffer?
        while current.width >= 4 * dst.width && current.height >= 4 * dst.height {
            let half = ImageBuffer(width: Int(current.width) / 2, height: Int(current.height) / 2,
                                   channels: Int(src.channels), zeroed: false)
            try resize(current, into: half.cView, interpolation: .area)
            kept = half
            current = half.cView
        }
        let growing = current.width < dst.width || current.height < dst.height
        try withExtendedLifetime(kept) {
            try resize(current, into: dst, interpolation: growing ? .linear : .area)
        }
    }

    public static func gray(_ src: ImageBuffer) throws -> ImageBuffer {
        if src.channels == 1 { return src }
        let dst = ImageBuffer(width: src.width, height: src.height, channels: 1, zeroed: false)
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
