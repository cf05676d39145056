import CSightlineOpenCV
import Foundation
import SightlineSupport

/// A face cut out of a gray frame upright (turned back by its roll) and at
/// one scale: the box dlib's shape predictor was trained on (its HOG
/// detector's, about 2.45 times the geometric mean of the eye distance and
/// the eye-to-mouth distance wide, centred 0.42 of the eye-to-mouth distance
/// below the eyes; fitted on the 20 faces of the shared photos, whose boxes
/// are dlib's own) becomes `boxSide` pixels wide in the middle of a
/// `side`-pixel square. What is read from it (the 68 points, sharpness, the
/// HOG second look) is then independent of the face's size and roll.
///
/// A value made and used on one thread (it owns its pixels).
package struct UprightFaceCrop {
    static let side = 192
    static let boxSide = 128.0
    /// The dlib box from the five landmarks (see above).
    static let boxPerMeanDistance = 2.45
    static let centreBelowEyes = 0.42
    /// Eye-to-mouth distance per eye distance, for a face whose mouth is not
    /// known (a Haar face): the mean of the shared photos' faces.
    static let mouthPerEyeDistance = 1.13

    let image: ImageBuffer
    /// Crop pixels to frame pixels.
    let toFrame: AffineTransform
    /// The face's dlib box in the crop: (left, top, side).
    var box: PixelRect<Double> {
        let margin = (Double(Self.side) - Self.boxSide) / 2
        return PixelRect(x: margin, y: margin, w: Self.boxSide, h: Self.boxSide)
    }
    /// The box's width in frame pixels.
    let frameBoxWidth: Double
    /// The detector's points the crop was cut by (frame pixels).
    let landmarks: FaceLandmarks

    /// nil when the eyes coincide.
    package init?(gray: ImageBuffer, landmarks: FaceLandmarks) throws {
        let eyes = FaceGeometry.midpoint(landmarks.rightEye, landmarks.leftEye)
        let dx = landmarks.leftEye.x - landmarks.rightEye.x, dy = landmarks.leftEye.y - landmarks.rightEye.y
        let eyeDistance = (dx * dx + dy * dy).squareRoot()
        guard eyeDistance > 1 else { return nil }
        let across = (x: dx / eyeDistance, y: dy / eyeDistance)
        let down = (x: -across.y, y: across.x)
        var mouthDistance = Self.mouthPerEyeDistance * eyeDistance
        if let right = landmarks.mouthRight, let left = landmarks.mouthLeft {
            let mouth = FaceGeometry.midpoint(right, left)
            // Along the face's down axis (a turned face's mouth is off to one side).
            let along = (mouth.x - eyes.x) * down.x + (mouth.y - eyes.y) * down.y
            if along > 0.3 * eyeDistance { mouthDistance = along }
        }
        let width = Self.boxPerMeanDistance * (eyeDistance * mouthDistance).squareRoot()
        let centre = PixelPoint(x: eyes.x + Self.centreBelowEyes * mouthDistance * down.x,
                                y: eyes.y + Self.centreBelowEyes * mouthDistance * down.y)
        let roll = FaceGeometry.roll(rightEye: landmarks.rightEye, leftEye: landmarks.leftEye)
        let half = Double(Self.side) / 2
        let toCrop = AffineTransform.rotation(about: centre, clockwiseDegrees: -roll, scale: Self.boxSide / width,
                                              to: PixelPoint(x: half, y: half))
        guard let back = toCrop.inverted else { return nil }
        let crop = ImageBuffer(width: Self.side, height: Self.side, channels: 1)
        var matrix = toCrop.matrix
        try OpenCVError.check { err in
            matrix.withUnsafeMutableBufferPointer { slcv_warp_affine(gray.cView, crop.cView, $0.baseAddress, err) }
        }
        image = crop
        toFrame = back
        frameBoxWidth = width
        self.landmarks = landmarks
    }

    /// Variance of the 4-neighbour Laplacian over the inner face (eyes to
    /// mouth, the middle of the box): low on a blurred face. At one scale
    /// (the crop's), so faces of any size compare; a small face upscaled
    /// into the crop reads lower, as it carries less detail.
    package func sharpness() -> Double {
        let margin = Int((Double(Self.side) - Self.boxSide) / 2)
        let x0 = margin + Int(Self.boxSide * 0.2), x1 = margin + Int(Self.boxSide * 0.8)
        let y0 = margin + Int(Self.boxSide * 0.25), y1 = margin + Int(Self.boxSide * 0.85)
        var sum = 0.0, squares = 0.0, count = 0.0
        let stride = image.stride
        let p = image.bytes
        for y in y0..<y1 {
            for x in x0..<x1 {
                let i = y * stride + x
                let value = Double(p[i - 1]) + Double(p[i + 1]) + Double(p[i - stride]) + Double(p[i + stride])
                    - 4 * Double(p[i])
                sum += value
                squares += value * value
                count += 1
            }
        }
        let mean = sum / count
        return squares / count - mean * mean
    }
}
