import CSightlineOpenCV
import Foundation

/// The second landmark pass: cuts an upright, upscaled crop around a face
/// (turned by its first-pass roll), runs YuNet on it, and maps the face found
/// nearest the crop's centre back to the frame. On the small faces of the
/// test photos this takes the median roll error from about 6° to about 2°
/// (three passes at most, each two 320x320 forward passes: costly, so live
/// pipelines may turn it off or cap the faces).
///
/// Belongs to the pipeline thread of its detector (shares its network).
final class LandmarkRefiner {
    /// Side of the square crop fed to the network (a multiple of 32).
    static let defaultCropSize = 320
    /// Crop sides as multiples of the face box's longer side; the landmarks
    /// of the crops are averaged (one crop alone is noisy on small faces).
    static let defaultContextFactors = [1.3, 1.5]
    /// YuNet's landmarks lean towards an upright face, so a tilted face's
    /// roll is underestimated; each further pass turns the crop by the roll
    /// found so far, until the crop face is upright within `uprightTolerance`.
    static let defaultMaxPasses = 3
    static let uprightTolerance = 1.5
    var cropSize = defaultCropSize
    var contextFactors = defaultContextFactors
    var maxPasses = defaultMaxPasses
    /// A crop face must score at least this to replace the first pass.
    static let scoreThreshold = 0.3
    /// ...and have its centre within this fraction of the crop side of the crop's centre.
    static let maxCentreOffset = 0.2

    private let network: YuNetNetwork
    private var crop = ImageBuffer(width: defaultCropSize, height: defaultCropSize, channels: 3)

    init(network: YuNetNetwork) { self.network = network }

    /// Refines up to `maxPasses` times, each pass starting from the last one's roll.
    func refine(_ face: FaceObservation, in frame: ImageBuffer) throws -> FaceObservation {
        if crop.width != cropSize { crop = ImageBuffer(width: cropSize, height: cropSize, channels: 3) }
        var current = face
        for _ in 0..<maxPasses {
            let before = FaceGeometry.withPose(current).roll ?? 0
            let crops = try contextFactors.compactMap { try refineOnce(current, context: $0, in: frame) }
            guard let next = Self.average(crops) else { break }
            current = next
            let after = FaceGeometry.withPose(current).roll ?? 0
            if abs(FaceGeometry.normalizedDegrees(after - before)) < Self.uprightTolerance { break }
        }
        return current
    }

    /// The face with landmarks and box from one crop, or nil when the crop
    /// finds no face where it should be.
    private func refineOnce(_ face: FaceObservation, context: Double, in frame: ImageBuffer) throws -> FaceObservation? {
        let size = Double(cropSize)
        let side = max(face.box.w, face.box.h) * context
        guard side >= 1 else { return nil }
        let centre = PixelPoint(x: face.box.x + face.box.w / 2, y: face.box.y + face.box.h / 2)
        let roll = FaceGeometry.withPose(face).roll ?? 0
        let toCrop = AffineTransform.rotation(about: centre, clockwiseDegrees: -roll, scale: size / side,
                                              to: PixelPoint(x: size / 2, y: size / 2))
        guard let toFrame = toCrop.inverted else { return nil }
        _ = try toCrop.matrix.withUnsafeBufferPointer { m in
            try OpenCVError.check { slcv_warp_affine(frame.cView, crop.cView, m.baseAddress, $0) }
        }
        let candidates = try network.run(crop, scoreThreshold: Self.scoreThreshold)
        guard let best = nearestCentre(candidates, size: size) else { return nil }
        var refined = toFrame.apply(to: best)
        refined.score = face.score
        return refined
    }

    /// The mean box and landmarks of several readings of one face.
    static func average(_ faces: [FaceObservation]) -> FaceObservation? {
        guard var mean = faces.first else { return nil }
        guard faces.count > 1 else { return mean }
        let n = Double(faces.count)
        func avg(_ value: (FaceObservation) -> Double) -> Double { faces.map(value).reduce(0, +) / n }
        func point(_ pick: (FaceLandmarks) -> PixelPoint?) -> PixelPoint? {
            let points = faces.compactMap { $0.landmarks.flatMap(pick) }
            guard points.count == faces.count else { return nil }
            return PixelPoint(x: points.map(\.x).reduce(0, +) / n, y: points.map(\.y).reduce(0, +) / n)
        }
        mean.box = (avg { $0.box.x }, avg { $0.box.y }, avg { $0.box.w }, avg { $0.box.h })
        if let rightEye = point({ $0.rightEye }), let leftEye = point({ $0.leftEye }) {
            mean.landmarks = FaceLandmarks(rightEye: rightEye, leftEye: leftEye, nose: point { $0.nose },
                                           mouthRight: point { $0.mouthRight }, mouthLeft: point { $0.mouthLeft })
        }
        return mean
    }

    private func nearestCentre(_ faces: [FaceObservation], size: Double) -> FaceObservation? {
        func offset(_ f: FaceObservation) -> Double {
            let dx = f.box.x + f.box.w / 2 - size / 2, dy = f.box.y + f.box.h / 2 - size / 2
            return (dx * dx + dy * dy).squareRoot()
        }
        let near = faces.filter { offset($0) <= Self.maxCentreOffset * size }
        return near.max { $0.score < $1.score }
    }
}
