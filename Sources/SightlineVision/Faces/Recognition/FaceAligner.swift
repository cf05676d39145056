import CSightlineOpenCV
import Foundation

/// Cuts a face out of a gray frame, rotated, scaled and shifted so that the
/// eyes land on fixed points of a small square crop: what LBPH compares.
///
/// A pure value; any thread may use its own copy.
public struct FaceAligner: Sendable {
    /// Side of the square crop in pixels.
    public var size: Int
    /// Where the eyes go, as fractions of the crop: the image-left eye
    /// (the subject's right eye) at (eyeInset, eyeHeight), the other at
    /// (1 - eyeInset, eyeHeight).
    public var eyeInset: Double
    public var eyeHeight: Double

    public static let defaultSize = 100
    public static let defaultEyeInset = 0.3
    public static let defaultEyeHeight = 0.38
    /// Eyes closer than this (pixels) give a crop too blurred to compare.
    public static let minimumEyeDistance = 8.0

    public init(size: Int = FaceAligner.defaultSize, eyeInset: Double = FaceAligner.defaultEyeInset,
                eyeHeight: Double = FaceAligner.defaultEyeHeight) {
        self.size = size
        self.eyeInset = eyeInset
        self.eyeHeight = eyeHeight
    }

    public enum Failure: Error, Equatable {
        case eyesTooClose(Double)
    }

    /// The aligned gray crop for a face with these landmarks (frame pixels).
    /// A BGR frame is converted to gray first.
    public func align(_ frame: ImageBuffer, landmarks: FaceLandmarks) throws -> ImageBuffer {
        let gray = try ImageOps.gray(frame)
        var matrix = try transform(landmarks: landmarks)
        let crop = ImageBuffer(width: size, height: size, channels: 1)
        try OpenCVError.check { err in
            matrix.withUnsafeMutableBufferPointer { slcv_warp_affine(gray.cView, crop.cView, $0.baseAddress, err) }
        }
        return crop
    }

    /// The 2x3 similarity (row-major) taking the eyes to their places in the crop.
    func transform(landmarks: FaceLandmarks) throws -> [Double] {
        // The subject's right eye is on the image's left.
        let from = (a: landmarks.rightEye, b: landmarks.leftEye)
        let side = Double(size)
        let to = (a: PixelPoint(x: eyeInset * side, y: eyeHeight * side),
                  b: PixelPoint(x: (1 - eyeInset) * side, y: eyeHeight * side))
        let sx = from.b.x - from.a.x, sy = from.b.y - from.a.y
        let eyeDistance = (sx * sx + sy * sy).squareRoot()
        guard eyeDistance >= Self.minimumEyeDistance else { throw Failure.eyesTooClose(eyeDistance) }
        let dx = to.b.x - to.a.x, dy = to.b.y - to.a.y
        // Complex-number form of a similarity: z' = k * z + t with k = d / s.
        let norm = sx * sx + sy * sy
        let kr = (dx * sx + dy * sy) / norm
        let ki = (dy * sx - dx * sy) / norm
        let tx = to.a.x - (kr * from.a.x - ki * from.a.y)
        let ty = to.a.y - (ki * from.a.x + kr * from.a.y)
        return [kr, -ki, tx, ki, kr, ty]
    }
}
