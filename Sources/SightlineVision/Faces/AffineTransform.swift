import Foundation

/// A 2x3 affine map of pixel coordinates (x' = a x + b y + c, y' = d x + e y + f),
/// used to cut rotated, scaled crops and to map points back from them.
public struct AffineTransform: Sendable, Equatable {
    public var a, b, c, d, e, f: Double

    public init(a: Double, b: Double, c: Double, d: Double, e: Double, f: Double) {
        self.a = a; self.b = b; self.c = c; self.d = d; self.e = e; self.f = f
    }

    /// Maps `centre` to `target` while turning the picture by `clockwiseDegrees`
    /// (image coordinates, y down) and scaling by `scale`.
    public static func rotation(about centre: PixelPoint, clockwiseDegrees: Double, scale: Double,
                                to target: PixelPoint) -> AffineTransform {
        let radians = clockwiseDegrees * .pi / 180
        let cosine = cos(radians) * scale, sine = sin(radians) * scale
        // In y-down coordinates [cos -sin; sin cos] turns clockwise on screen.
        return AffineTransform(a: cosine, b: -sine, c: target.x - cosine * centre.x + sine * centre.y,
                               d: sine, e: cosine, f: target.y - sine * centre.x - cosine * centre.y)
    }

    public func apply(_ p: PixelPoint) -> PixelPoint {
        PixelPoint(x: a * p.x + b * p.y + c, y: d * p.x + e * p.y + f)
    }

    /// The inverse map; nil when the matrix is singular.
    public var inverted: AffineTransform? {
        let determinant = a * e - b * d
        guard abs(determinant) > 1e-12 else { return nil }
        let ia = e / determinant, ib = -b / determinant, id = -d / determinant, ie = a / determinant
        return AffineTransform(a: ia, b: ib, c: -(ia * c + ib * f), d: id, e: ie, f: -(id * c + ie * f))
    }

    /// Row-major 2x3, as cv::warpAffine takes it.
    var matrix: [Double] { [a, b, c, d, e, f] }

    /// The face mapped through this transform: landmarks moved, the box kept
    /// centred on the mapped centre with its size scaled. Roll and yaw are
    /// left for the caller to recompute.
    func apply(to face: FaceObservation) -> FaceObservation {
        var face = face
        let centre = apply(PixelPoint(x: face.box.x + face.box.w / 2, y: face.box.y + face.box.h / 2))
        let scale = (a * a + d * d).squareRoot()
        let w = face.box.w * scale, h = face.box.h * scale
        face.box = PixelRect(x: centre.x - w / 2, y: centre.y - h / 2, w: w, h: h)
        if let l = face.landmarks {
            face.landmarks = FaceLandmarks(rightEye: apply(l.rightEye), leftEye: apply(l.leftEye),
                                           nose: l.nose.map(apply), mouthRight: l.mouthRight.map(apply),
                                           mouthLeft: l.mouthLeft.map(apply))
        }
        return face
    }
}
