import CSightlineOpenCV

extension ImageOps {
    /// Luma SSIM of two images of one size (the standard Gaussian 11x11,
    /// sigma 1.5 form; 1 is identical): both are made gray (BT.601 luma)
    /// first. The video benchmark's quality figure.
    public static func ssim(_ a: ImageBuffer, _ b: ImageBuffer) throws -> Double {
        let grayA = try gray(a), grayB = try gray(b)
        var value = 0.0
        try OpenCVError.check { slcv_ssim(grayA.cView, grayB.cView, &value, $0) }
        return value
    }
}
