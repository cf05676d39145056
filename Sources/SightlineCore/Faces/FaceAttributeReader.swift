import CSightlineOpenCV
import Foundation

/// Reads `smile` (0...1) and `eyesClosed` for a face from its pixels, the
/// way the Core Image tutorial's features did, with OpenCV's cascades.
///
/// The face is cut out aligned by its eyes (landmarks, or where eyes sit in
/// the box when a Haar face has none) into a small square crop, so the mouth
/// and eyes always fall in the same windows whatever the roll:
/// - **smile**: the smile cascade's strongest hit in the mouth window (its
///   confidence, not a yes/no), mapped to 0...1 by a logistic curve; 0 when
///   nothing there looks like a smiling mouth;
/// - **eyesClosed**: the eye cascades (plain and behind glasses) are trained
///   on open eyes; an eye is open when either finds it in its window with
///   confidence. Eyes are closed when neither eye is open.
///
/// Each is omitted (nil) where it cannot be measured: no cascade file, a face
/// too small (eyes closer than `minEyeDistanceForSmile` / `...ForEyes`
/// pixels), or, for the eyes, a face turned further than `maxYawForEyes` or
/// one whose eyes the detector did not place (a Haar face whose eye pair
/// was not found gives its smile only: judging eyes at guessed places would
/// call a face "closed" for every eye the cascade missed).
///
/// Belongs to the thread of the detector that owns it (cascades and the crop
/// are not shared).
public final class FaceAttributeReader {
    public struct Options: Sendable {
        public var cascadeDirectory = "/usr/share/opencv4/haarcascades"
        public var smileCascade = "haarcascade_smile.xml"
        public var eyeCascades = ["haarcascade_eye.xml", "haarcascade_eye_tree_eyeglasses.xml"]
        /// Eye distance (frame pixels) below which a smile is not read ...
        public var minEyeDistanceForSmile = 10.0
        /// ... and below which eyes are not judged (a blink is a few pixels).
        public var minEyeDistanceForEyes = 20.0
        /// Eyes of faces turned further than this (degrees) are not judged.
        public var maxYawForEyes = 30.0
        /// Smile confidence giving smile 0.5, and the curve's steepness.
        public var smileMidpoint = 1.5
        public var smileSteepness = 1.5
        /// An eye window whose best eye-cascade confidence exceeds this is
        /// open. On the shared photos open eyes read 1.6-3.1 and the eyes of a
        /// girl laughing with them squeezed shut 0.8.
        public var openEyeWeight = 1.2

        public init() {}
    }

    /// The aligned crop: 120 px square, eyes 40 % of it apart at 38 % height
    /// (FaceAligner's layout, as LBPH uses, at a larger size).
    static let cropSize = 120
    static let aligner = FaceAligner(size: cropSize)
    /// Windows in the crop, as fractions (x, y, w, h). The mouth sits about
    /// one eye distance below the eyes, at 0.78 of the crop.
    static let mouthWindow = (x: 0.12, y: 0.62, w: 0.76, h: 0.38)
    /// Eye windows are centred on each eye, tight enough to leave out the
    /// eyebrow (a brow over a lid line looks like an eye to the cascade).
    /// Where each eye window is tried, as fractions of the crop (see openEyeConfidence).
    static let eyeWindowShifts: [(x: Double, y: Double)] = [(0, 0), (0, -0.03), (0, 0.03), (-0.03, 0), (0.03, 0)]
    static func eyeWindow(centreX: Double) -> (x: Double, y: Double, w: Double, h: Double) {
        (centreX - 0.15, 0.24, 0.3, 0.28)
    }
    /// The cascades' scale step inside the crop, and the sizes searched: a
    /// mouth is 0.35-0.45 of the crop wide and the smile cascade's box about
    /// 1.3 times that; an eye's box about half the eye distance. Bounding
    /// them keeps a face to about 3 ms on one core here (8.7 ms unbounded).
    static let scaleStep = 1.05
    static let smileSize = (min: (w: 48, h: 24), max: (w: 96, h: 48))
    static let eyeSize = (min: (w: 20, h: 20), max: (w: 36, h: 36))
    /// Where eyes sit in a face box without eye landmarks (fractions of the box).
    static let boxEyeInset = 0.3, boxEyeHeight = 0.38

    public let options: Options
    private let smiles: HaarCascade?
    private let eyes: [HaarCascade]

    /// Cascades that are missing only turn their attribute off.
    public init(options: Options = Options()) {
        self.options = options
        let directory = options.cascadeDirectory as NSString
        smiles = try? HaarCascade(path: directory.appendingPathComponent(options.smileCascade))
        eyes = options.eyeCascades.compactMap { try? HaarCascade(path: directory.appendingPathComponent($0)) }
    }

    /// The face with `smile` and `eyesClosed` filled where they can be measured.
    /// `gray` is the frame the face was found in, 8-bit gray.
    public func read(_ face: FaceObservation, gray: ImageBuffer) throws -> FaceObservation {
        var face = face
        let eyePoints = face.landmarks ?? Self.estimatedEyes(face.box)
        let eyeDistance = hypot(eyePoints.leftEye.x - eyePoints.rightEye.x, eyePoints.leftEye.y - eyePoints.rightEye.y)
        let readSmile = smiles != nil && eyeDistance >= options.minEyeDistanceForSmile
        let readEyes = !eyes.isEmpty && face.landmarks != nil && eyeDistance >= options.minEyeDistanceForEyes
            && abs(face.yaw ?? 0) <= options.maxYawForEyes
        guard readSmile || readEyes else { return face }
        let crop = try Self.aligner.align(gray, landmarks: eyePoints)
        if readSmile { face.smile = try smile(in: crop) }
        if readEyes { face.eyesClosed = try openEyeConfidence(in: crop) <= options.openEyeWeight }
        return face
    }

    /// Eye points for a box without landmarks: where a frontal face's eyes sit.
    static func estimatedEyes(_ box: (x: Double, y: Double, w: Double, h: Double)) -> FaceLandmarks {
        let y = box.y + boxEyeHeight * box.h
        return FaceLandmarks(rightEye: PixelPoint(x: box.x + boxEyeInset * box.w, y: y),
                             leftEye: PixelPoint(x: box.x + (1 - boxEyeInset) * box.w, y: y))
    }

    /// 0...1 from the smile cascade's strongest hit in the mouth window of
    /// the equalized crop (the cascade was trained on equalized faces).
    func smile(in crop: ImageBuffer) throws -> Double? {
        guard let smiles else { return nil }
        let equalized = ImageBuffer(width: crop.width, height: crop.height, channels: 1)
        try OpenCVError.check { slcv_equalize_hist(crop.cView, equalized.cView, $0) }
        guard let weight = try smiles.bestWeight(Self.window(equalized, Self.mouthWindow), scaleFactor: Self.scaleStep,
                                                 minSize: Self.smileSize.min, maxSize: Self.smileSize.max) else {
            return 0
        }
        return Self.logistic(weight, midpoint: options.smileMidpoint, steepness: options.smileSteepness)
    }

    /// The eye cascades' strongest confidence over both eye windows of the
    /// plain gray crop (equalizing washes out eyes behind glasses); -inf when
    /// nothing there looks like an open eye. Each window is also tried
    /// shifted by 3 % of the crop each way: the windows are tight (to leave
    /// out the eyebrow), so a landmark 1-2 px off (which differs between
    /// detections of one face, and between CPUs' arithmetic) could otherwise
    /// turn an open eye closed. Stops at the first confidence over
    /// `openEyeWeight`: one open eye is enough, and most eyes are open, so an
    /// open face costs one window and only closed eyes cost all of them.
    func openEyeConfidence(in crop: ImageBuffer) throws -> Double {
        var best = -Double.infinity
        for cascade in eyes {
            for centre in [FaceAligner.defaultEyeInset, 1 - FaceAligner.defaultEyeInset] {
                for shift in Self.eyeWindowShifts {
                    var part = Self.eyeWindow(centreX: centre)
                    part.x += shift.x
                    part.y += shift.y
                    if let weight = try cascade.bestWeight(Self.window(crop, part), scaleFactor: Self.scaleStep,
                                                           minSize: Self.eyeSize.min, maxSize: Self.eyeSize.max) {
                        best = max(best, weight)
                    }
                    if best > options.openEyeWeight { return best }
                }
            }
        }
        return best
    }

    /// A view of part of the crop (fractions of its side).
    static func window(_ crop: ImageBuffer, _ part: (x: Double, y: Double, w: Double, h: Double)) -> slcv_image {
        let side = Double(crop.width)
        let x = max(0, Int(part.x * side)), y = max(0, Int(part.y * side))
        let w = min(crop.width - x, Int(part.w * side)), h = min(crop.height - y, Int(part.h * side))
        return crop.cView(x: x, y: y, width: w, height: h)
    }

    static func logistic(_ x: Double, midpoint: Double, steepness: Double) -> Double {
        1 / (1 + exp(-steepness * (x - midpoint)))
    }
}
