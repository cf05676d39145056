import CSightlineOpenCV
import Foundation

/// Reads `smile` (0...1) and `eyesClosed` for a face from its pixels.
///
/// With dlib's 68-point shape predictor (`FaceShapeModel`, Debian's
/// `libdlib-data`), the face is cut out upright at one scale
/// (`UprightFaceCrop`), the 68 points are fitted there, and:
/// - **smile** is a logistic curve over the mouth's shape: lips apart, its
///   corners lifted above the lips' centre and its width, each per
///   interocular distance (`FaceShape.mouthOpen`, `cornerLift`, `mouthWidth`);
/// - **eyesClosed**: both eyes' mean eye aspect ratio (Soukupová and Čech
///   2016) under `closedEyeRatio`, under `doubtfulEyeRatio` with no open
///   eye found by the eye cascades or only flat skin between the lids
///   (`EyeTexture`), or under `eyelessEyeRatio` with next to nothing
///   eye-like found (see `Options`).
/// Each is omitted (nil) on a face it cannot judge: narrower than
/// `minFaceWidthForSmile` / `...ForEyes` frame pixels (the detector's box),
/// turned further than `maxYawForSmile` / `...ForEyes` (yaw read from the
/// 68 points), blurred (the crop's variance of Laplacian under
/// `minSharpness`), or cut by the frame's edge (`isWhollyInFrame`).
///
/// Without the model file (logged once by `FaceDetectorFactory`) it falls
/// back to OpenCV's cascades as before: the smile cascade's strongest hit in
/// the mouth window of an eye-aligned crop, and eyes closed when neither eye
/// cascade finds an open eye (`cascadeRead`).
///
/// Belongs to the thread of the detector that owns it (cascades and the crop
/// are not shared; the shape model is, read only).
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

        /// dlib's 68-point model; nil (or a file that does not load) reads
        /// with the cascades above.
        public var shapeModelPath: String? = FaceShapeModel.defaultPath
        /// Faces narrower than this (the detector's box, frame pixels) get no
        /// smile, and no eyes under the second.
        public var minFaceWidthForSmile = 36.0
        public var minFaceWidthForEyes = 40.0
        /// The eye cascades' look (the rules with `closedEyeCascadeWeight`
        /// and `eyelessCascadeWeight` below) only on faces at least this
        /// wide: an eye of a narrower face is under 12 frame pixels, and
        /// the cascades find nothing in it scaled up whether it is open or
        /// shut. The labelled open-eyed faces shrunk to 44-52 px (JPEG 70)
        /// had 11 of 175 called closed with the cascades' look, none
        /// without it; under 56 px the aspect ratio and the texture between
        /// the lids decide alone.
        public var minFaceWidthForEyeCascades = 56.0
        /// Faces turned further than this (degrees, from the 68 points) get
        /// no smile; their eyes are held to `maxYawForEyes` above.
        public var maxYawForSmile = 50.0
        /// Faces whose upright crop's variance of Laplacian is under this
        /// get neither (too blurred to read; the labelled faces read 15 and
        /// more, blurred 30-pixel faces 7).
        public var minSharpness = 12.0
        /// smile = logistic(steepness * (liftWeight * cornerLift + widthWeight
        /// * mouthWidth + upperLiftWeight * upperLipLift - midpoint)), see
        /// `FaceShape`: a smile widens the mouth and lifts its corners, to
        /// the upper lip when the mouth is closed; a mouth dropped open
        /// without one (a shout, surprise, talking) keeps its corners low
        /// under the upper lip. Fitted by logistic regression (scripts/fit-smile.py,
        /// which prints these) on the 42 labelled faces of 36 px and more that are
        /// not marked heldOut (Tests/e2e/face_attribute_labels.json) only; on the
        /// 66 held-out faces (photos and people never fitted on) it is right on 62,
        /// 4 of 41 not smiling called smiling, no smile missed. The weights before
        /// (20.8, 19.9, 14.0, 14.2) had been fitted on all 89 faces, held-out ones
        /// included, so their figures on those faces were not a fair test.
        public var shapeSmileLiftWeight = 15.8
        public var shapeSmileWidthWeight = 20.4
        public var shapeSmileUpperLiftWeight = -2.2
        public var shapeSmileMidpoint = 14.2
        public var shapeSmileSteepness = 1.0
        /// Eyes are closed when both eyes' mean aspect ratio is under
        /// `closedEyeRatio`, or under `doubtfulEyeRatio` while the eye
        /// cascades find no open eye (their best confidence at most
        /// `closedEyeCascadeWeight`): the 68-point fit of eyes squeezed shut
        /// in a laugh can read 0.28, open eyes read 0.17 and more. Under
        /// `eyelessEyeRatio`, eyes where the cascades find next to nothing
        /// (at most `eyelessCascadeWeight`) are closed too: shut lids with
        /// no eye texture let the fit float them up to 0.35, while every open
        /// eye of the labelled faces gave the cascades 0.77 or more (50 of 50
        /// faces).
        ///
        /// Under `doubtfulEyeRatio`, eyes whose better eye's `EyeTexture`
        /// contrast is under `flatEyeContrast` are closed too: lids the fit
        /// holds a little apart over nothing but skin (blinks of a 45-pixel
        /// face read 0.05-0.07; of the 85 open-eyed labelled faces the
        /// lowest read 0.12).
        public var closedEyeRatio = 0.15
        public var doubtfulEyeRatio = 0.3
        public var flatEyeContrast = 0.1
        public var closedEyeCascadeWeight = 1.0
        public var eyelessEyeRatio = 0.4
        public var eyelessCascadeWeight = 0.5

        public init() {}
    }

    /// The aligned crop: 120 px square, eyes 40 % of it apart at 38 % height
    /// (FaceAligner's layout, as LBPH uses, at a larger size).
    static let cropSize = 120
    static let aligner = FaceAligner(size: cropSize)
    /// Windows in the crop, as fractions of its side. The mouth sits about
    /// one eye distance below the eyes, at 0.78 of the crop.
    static let mouthWindow = NormalizedBox(x: 0.12, y: 0.62, w: 0.76, h: 0.38)
    /// Eye windows are centred on each eye, tight enough to leave out the
    /// eyebrow (a brow over a lid line looks like an eye to the cascade).
    /// Where each eye window is tried, as fractions of the crop (see openEyeConfidence).
    static let eyeWindowShifts: [(x: Double, y: Double)] = [(0, 0), (0, -0.03), (0, 0.03), (-0.03, 0), (0.03, 0)]
    static func eyeWindow(centreX: Double) -> NormalizedBox {
        NormalizedBox(x: centreX - 0.15, y: 0.24, w: 0.3, h: 0.28)
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
    /// dlib's model, nil when it did not load (then the cascades read).
    package let shapeModel: FaceShapeModel?
    /// Set SIGHTLINE_FACE_MEASURES to have each face's measures written to
    /// standard error (one JSON object a line), to calibrate the curves above.
    static let traceMeasures = ProcessInfo.processInfo.environment["SIGHTLINE_FACE_MEASURES"] != nil

    /// Cascades that are missing only turn their attribute off; a shape model
    /// that is missing turns to the cascades.
    public init(options: Options = Options()) {
        self.options = options
        let directory = options.cascadeDirectory as NSString
        smiles = try? HaarCascade(path: directory.appendingPathComponent(options.smileCascade))
        eyes = options.eyeCascades.compactMap { try? HaarCascade(path: directory.appendingPathComponent($0)) }
        shapeModel = options.shapeModelPath.flatMap { try? FaceShapeModel.shared(path: $0) }
    }

    /// Why the shape model is not used (nil when it is): for the log.
    public static func shapeModelProblem(_ options: Options) -> String? {
        guard let path = options.shapeModelPath else { return "no shape model configured" }
        do {
            _ = try FaceShapeModel.shared(path: path)
            return nil
        } catch {
            return "dlib shape model \(path) did not load (\(error)); install Debian's libdlib-data"
        }
    }

    /// The face with `smile` and `eyesClosed` filled where they can be
    /// judged. `gray` is the frame the face was found in, 8-bit gray.
    public func read(_ face: FaceObservation, gray: ImageBuffer) throws -> FaceObservation {
        var profile = FacePassProfile()
        return try read(face, gray: gray, profile: &profile)
    }

    /// As `read`, adding the upright crop's time to `profile`'s `uprightCropSeconds`.
    package func read(_ face: FaceObservation, gray: ImageBuffer, profile: inout FacePassProfile) throws
        -> FaceObservation {
        guard Self.isWhollyInFrame(face.box, width: gray.width, height: gray.height) else {
            var cut = face
            cut.smile = nil
            cut.eyesClosed = nil
            return cut
        }
        guard let shapeModel else { return try cascadeRead(face, gray: gray) }
        // A Haar face whose eyes were not found is cut where a frontal face's
        // eyes sit in its box; its eyes are not judged (see below).
        guard let crop = try profile.timed(\.uprightCropSeconds, {
            try UprightFaceCrop(gray: gray, landmarks: face.landmarks ?? Self.estimatedEyes(face.box))
        }) else { return face }
        return try read(face, crop: crop, shape: shapeModel.fit(crop))
    }

    /// As `read`, with the upright crop and its 68 points already made.
    package func read(_ face: FaceObservation, crop: UprightFaceCrop, shape: FaceShape) throws -> FaceObservation {
        var face = face
        let sharpness = crop.sharpness()
        let yaw = shape.yaw
        let sharp = sharpness >= options.minSharpness
        let eyeRatio = shape.eyeAspectRatio
        let judgeSmile = sharp && face.box.w >= options.minFaceWidthForSmile && abs(yaw) <= options.maxYawForSmile
        let judgeEyes = sharp && face.landmarks != nil && face.box.w >= options.minFaceWidthForEyes
            && abs(yaw) <= options.maxYawForEyes
        // The cascades' second look at eyes the fit calls neither shut nor surely open, on faces wide enough.
        let cascadesLook = judgeEyes && face.box.w >= options.minFaceWidthForEyeCascades
            && eyeRatio >= options.closedEyeRatio && eyeRatio < options.eyelessEyeRatio
        var cascadeEyes: Double?
        if let landmarks = face.landmarks, Self.traceMeasures || cascadesLook {
            cascadeEyes = try openEyeConfidence(in: crop, eyes: landmarks)
        }
        // The texture between the lids, for eyes the fit calls neither shut nor surely open.
        var eyeContrast: Double?
        if Self.traceMeasures || (judgeEyes && eyeRatio >= options.closedEyeRatio && eyeRatio < options.doubtfulEyeRatio) {
            eyeContrast = EyeTexture.betterEye(in: crop, shape: shape)
        }
        if Self.traceMeasures {
            let line = String(format: "{\"box\": [%.1f, %.1f, %.1f, %.1f], \"sharpness\": %.1f, \"yaw68\": %.1f, "
                              + "\"mouthWidth\": %.3f, \"cornerLift\": %.3f, \"mouthOpen\": %.3f, \"ear\": %.3f, "
                              + "\"earRight\": %.3f, \"earLeft\": %.3f, \"smile\": %.3f, \"cascadeEyes\": %.3f, "
                              + "\"upperLipLift\": %.3f, \"eyeContrast\": %.3f}\n",
                              face.box.x, face.box.y, face.box.w, face.box.h, sharpness, yaw, shape.mouthWidth,
                              shape.cornerLift, shape.mouthOpen, eyeRatio, shape.eyeAspectRatio(from: 36),
                              shape.eyeAspectRatio(from: 42), smile(shape), max(-9, cascadeEyes ?? -9),
                              shape.upperLipLift, eyeContrast ?? -9)
            FileHandle.standardError.write(Data(line.utf8))
        }
        face.smile = judgeSmile ? smile(shape) : nil
        face.eyesClosed = nil
        // Traced measures read the cascades on every face; only their look counts.
        if !cascadesLook { cascadeEyes = nil }
        if judgeEyes {
            face.eyesClosed = eyeRatio < options.closedEyeRatio
                || (eyeRatio < options.doubtfulEyeRatio && (cascadeEyes ?? .infinity) <= options.closedEyeCascadeWeight)
                || (eyeRatio < options.doubtfulEyeRatio && (eyeContrast ?? .infinity) < options.flatEyeContrast)
                || (eyeRatio < options.eyelessEyeRatio && (cascadeEyes ?? .infinity) <= options.eyelessCascadeWeight)
        }
        return face
    }

    /// Whether a face box lies inside the frame, give or take a tenth of its
    /// width (a whole face's box can reach a little past the edge). A face cut
    /// by the frame's edge is not judged: the fit on what is left of it put
    /// the lids of faces half out of a panned group photo (insightface's
    /// t1.jpg) shut on every frame.
    static func isWhollyInFrame(_ box: PixelRect<Double>, width: Int, height: Int) -> Bool {
        box.isInside(width: width, height: height, inset: -0.1)
    }

    /// 0...1 from the mouth's shape (see `Options.shapeSmile...`).
    func smile(_ shape: FaceShape) -> Double {
        let z = options.shapeSmileLiftWeight * shape.cornerLift + options.shapeSmileWidthWeight * shape.mouthWidth
            + options.shapeSmileUpperLiftWeight * shape.upperLipLift
        return Self.logistic(z, midpoint: options.shapeSmileMidpoint, steepness: options.shapeSmileSteepness)
    }

    /// The eye cascades' best confidence (`openEyeConfidence(in:)`) on an
    /// eye-aligned cut of the upright crop, the eyes at `eyes` (frame
    /// pixels); nil without eye cascades.
    package func openEyeConfidence(in crop: UprightFaceCrop, eyes: FaceLandmarks) throws -> Double? {
        guard !self.eyes.isEmpty, let toCrop = crop.toFrame.inverted else { return nil }
        let eyesInCrop = FaceLandmarks(rightEye: toCrop.apply(eyes.rightEye), leftEye: toCrop.apply(eyes.leftEye))
        return try openEyeConfidence(in: Self.aligner.align(crop.image, landmarks: eyesInCrop))
    }

    /// The cascades' reading (no shape model): see the type's comment.
    func cascadeRead(_ face: FaceObservation, gray: ImageBuffer) throws -> FaceObservation {
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
    static func estimatedEyes(_ box: PixelRect<Double>) -> FaceLandmarks {
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
    package func openEyeConfidence(in crop: ImageBuffer) throws -> Double {
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
    static func window(_ crop: ImageBuffer, _ part: NormalizedBox) -> slcv_image {
        let side = Double(crop.width)
        let x = max(0, Int(part.x * side)), y = max(0, Int(part.y * side))
        let w = min(crop.width - x, Int(part.w * side)), h = min(crop.height - y, Int(part.h * side))
        return crop.cView(x: x, y: y, width: w, height: h)
    }

    static func logistic(_ x: Double, midpoint: Double, steepness: Double) -> Double {
        1 / (1 + exp(-steepness * (x - midpoint)))
    }
}
