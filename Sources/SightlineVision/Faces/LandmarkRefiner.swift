import CSightlineOpenCV
import Foundation

/// The second landmark pass: cuts an upright, upscaled crop around a face
/// (turned by its first-pass roll), runs YuNet on it, and maps the face found
/// nearest the crop's centre back to the frame. On the small faces of the
/// test photos this takes the median roll error from about 6° to about 2°,
/// and 17 of 18 faces within 8° (three starting turns, up to three passes
/// each, each pass two 320x320 forward passes: costly, so live pipelines
/// may turn it off or cap the faces).
///
/// Belongs to the thread of its detector (shares its network; see FaceDetector).
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
    /// Live re-reading's tolerance before a second crop: two readings of a
    /// still head scatter by up to 3 degrees (see `LandmarkRereadSchedule`),
    /// and at 1.5 a second crop followed 46 % of the first ones on a pan of
    /// still heads, chasing that scatter.
    static let liveUprightBase = 3.0
    var cropSize = defaultCropSize
    /// Side of the crop of the live, tracked case (`refineFromTrack`).
    var trackedCropSize = defaultCropSize
    var contextFactors = defaultContextFactors
    var maxPasses = defaultMaxPasses
    /// A crop face must score at least this to replace the first pass.
    static let scoreThreshold = 0.3
    /// ...and have its centre within this fraction of the crop side of the crop's centre.
    static let maxCentreOffset = 0.2

    private let network: YuNetNetwork
    /// Forward passes run so far (for the benchmark and tests).
    private(set) var forwardPasses = 0
    /// The crop buffers, by side (kept between calls).
    private var crops: [Int: ImageBuffer] = [:]

    init(network: YuNetNetwork) { self.network = network }

    /// Refines from the first-pass roll and from `startOffsets` around it;
    /// each start is followed up to `maxPasses` times (each pass starting from
    /// the last one's roll), and the start whose final crops the network
    /// scores highest wins. One start alone can run away: a first-pass roll
    /// of the wrong sign turns the crop further the wrong way, and the
    /// network, which leans towards upright faces, follows it.
    ///
    /// `startRoll`, when given, replaces the first-pass roll as the place to
    /// start: the roll its track already had, which is usually within the
    /// upright tolerance of the answer, so one pass settles it.
    func refine(_ face: FaceObservation, in frame: ImageBuffer, startRoll: Double? = nil) throws -> FaceObservation {
        let firstRoll = startRoll ?? FaceGeometry.withPose(face).roll ?? 0
        let results = try startOffsets.compactMap { try follow(face, from: firstRoll + $0, in: frame) }
        guard let best = results.max(by: { $0.score < $1.score }) else { return face }
        // Starts that ended near the best one read the same face: their
        // score-weighted mean is steadier than any one reading.
        let bestRoll = FaceGeometry.withPose(best.face).roll ?? 0
        let agreeing = results.filter {
            abs(FaceGeometry.normalizedDegrees((FaceGeometry.withPose($0.face).roll ?? 0) - bestRoll)) <= Self.agreement
        }
        guard var refined = Self.average(agreeing.map(\.face), weights: agreeing.map(\.score)) else { return face }
        refined.score = face.score
        return refined
    }

    /// The live, tracked case: one crop turned by the tracked roll (one
    /// forward pass). The tracked roll is close, so the crop face is near
    /// upright, where YuNet's landmarks read roll best; when it is not upright
    /// within `uprightTolerance` (more for a small face,
    /// `liveUprightTolerance`; the head turned the other way since), a
    /// second crop turned by that reading follows, since a reading on a tilted
    /// crop falls short of the turn.
    func refineFromTrack(_ face: FaceObservation, in frame: ImageBuffer, trackedRoll: Double) throws -> FaceObservation {
        guard var refined = try readFromTrack(face, in: frame, trackedRoll: trackedRoll)?.face else { return face }
        refined.score = face.score
        return refined
    }

    /// `refineFromTrack`'s reading with the network's score of its last
    /// crop (how upright and face-like the face looked there), or nil when no
    /// crop found the face.
    func readFromTrack(_ face: FaceObservation, in frame: ImageBuffer, trackedRoll: Double, side: Int? = nil) throws
        -> (face: FaceObservation, cropScore: Double)? {
        var turn = trackedRoll
        var best: FaceObservation?
        for _ in 0..<2 {
            guard let next = try refineOnce(best ?? face, context: Self.trackedContext, in: frame, roll: turn,
                                            side: side ?? trackedCropSize) else { break }
            best = next
            let after = FaceGeometry.withPose(next).roll ?? turn
            if abs(FaceGeometry.normalizedDegrees(after - turn)) < Self.liveUprightTolerance(width: face.box.w) { break }
            turn = after
        }
        return best.map { ($0, $0.score) }
    }

    /// Looks for a tracked face the frame-wide pass missed: one crop around
    /// its predicted box turned by `roll`; the face found near the crop's
    /// centre scoring at least `minScore` (with its crop score), or nil.
    func confirm(_ face: FaceObservation, in frame: ImageBuffer, roll: Double, minScore: Double, side: Int? = nil)
        throws -> FaceObservation? {
        guard let found = try refineOnce(face, context: Self.trackedContext, in: frame, roll: roll,
                                         side: side ?? trackedCropSize), found.score >= minScore else { return nil }
        return found
    }

    /// `uprightTolerance` for a face `width` pixels wide in the frame: a
    /// face narrower than `steadyReferenceWidth` has its eyes a few pixels
    /// apart, its readings scatter by more than 1.5°, and a second crop
    /// there follows the scatter, not a lean (on the pan video, four first
    /// crops in five were followed by a second before this).
    static func liveUprightTolerance(width: Double) -> Double {
        liveUprightBase * max(1, steadyReferenceWidth / max(1, width))
    }

    /// Faces at least this wide (pixels) are held to the fixed tolerances
    /// of live reading (`uprightTolerance` here, `steadyRollDegrees` in
    /// `YuNetDetector`); narrower ones to those times this over their width.
    static let steadyReferenceWidth = 80.0

    /// Crop side for `refineFromTrack`, in face sizes.
    static let trackedContext = 1.4

    /// Starts whose final rolls differ by at most this (degrees) are averaged.
    static let agreement = 5.0

    /// Crop turns tried around the first-pass roll (degrees).
    static let defaultStartOffsets = [0.0, -20, 20]
    var startOffsets = defaultStartOffsets

    /// Passes from one starting roll until the crop face is upright; the
    /// last reading and the mean score of its crops.
    private func follow(_ face: FaceObservation, from roll: Double, in frame: ImageBuffer) throws
        -> (face: FaceObservation, score: Double)? {
        var current = face
        var turn = roll
        var last: (face: FaceObservation, score: Double)?
        for _ in 0..<maxPasses {
            let crops = try contextFactors.compactMap {
                try refineOnce(current, context: $0, in: frame, roll: turn, side: cropSize)
            }
            guard let next = Self.average(crops) else { break }
            last = (next, crops.map(\.score).reduce(0, +) / Double(crops.count))
            current = next
            let after = FaceGeometry.withPose(next).roll ?? 0
            if abs(FaceGeometry.normalizedDegrees(after - turn)) < Self.uprightTolerance { break }
            turn = after
        }
        return last
    }

    /// The face with landmarks and box from one crop, or nil when the crop
    /// finds no face where it should be.
    private func refineOnce(_ face: FaceObservation, context: Double, in frame: ImageBuffer, roll fixedRoll: Double?,
                            side cropSide: Int) throws -> FaceObservation? {
        let crop: ImageBuffer
        if let kept = crops[cropSide] {
            crop = kept
        } else {
            crop = ImageBuffer(width: cropSide, height: cropSide, channels: 3)
            crops[cropSide] = crop
        }
        let size = Double(cropSide)
        let side = max(face.box.w, face.box.h) * context
        guard side >= 1 else { return nil }
        let centre = PixelPoint(x: face.box.x + face.box.w / 2, y: face.box.y + face.box.h / 2)
        let roll = fixedRoll ?? FaceGeometry.withPose(face).roll ?? 0
        let toCrop = AffineTransform.rotation(about: centre, clockwiseDegrees: -roll, scale: size / side,
                                              to: PixelPoint(x: size / 2, y: size / 2))
        guard let toFrame = toCrop.inverted else { return nil }
        _ = try toCrop.matrix.withUnsafeBufferPointer { m in
            try OpenCVError.check { slcv_warp_affine(frame.cView, crop.cView, m.baseAddress, $0) }
        }
        let candidates = try network.run(crop, scoreThreshold: Self.scoreThreshold)
        forwardPasses += 1
        guard let best = nearestCentre(candidates, size: size) else { return nil }
        return toFrame.apply(to: best)
    }

    /// The mean box and landmarks of several readings of one face, weighted
    /// by `weights` when given (equal weights otherwise).
    static func average(_ faces: [FaceObservation], weights: [Double]? = nil) -> FaceObservation? {
        guard var mean = faces.first else { return nil }
        guard faces.count > 1 else { return mean }
        let w = weights ?? Array(repeating: 1, count: faces.count)
        let total = w.reduce(0, +)
        guard w.count == faces.count, total > 0 else { return nil }
        func avg(_ value: [Double]) -> Double { zip(value, w).map { $0 * $1 }.reduce(0, +) / total }
        func point(_ pick: (FaceLandmarks) -> PixelPoint?) -> PixelPoint? {
            let points = faces.compactMap { $0.landmarks.flatMap(pick) }
            guard points.count == faces.count else { return nil }
            return PixelPoint(x: avg(points.map(\.x)), y: avg(points.map(\.y)))
        }
        mean.box = PixelRect(x: avg(faces.map(\.box.x)), y: avg(faces.map(\.box.y)), w: avg(faces.map(\.box.w)),
                             h: avg(faces.map(\.box.h)))
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
