import CSightlineOpenCV
import Foundation

/// The fallback face detector: OpenCV's Haar cascades from Debian's
/// opencv-data. The frontal-face cascade runs on a reduced, equalized gray
/// frame (the tutorial's full-size 640x480 pass costs about 150 ms); the eye
/// cascade runs inside each face for eye landmarks and roll, the smile
/// cascade inside its lower part for `smile`.
///
/// Haar gives no confidence, so every face has score 1; there is no nose, so
/// yaw is left unknown (nil), and `eyesClosed` is not measured.
///
/// Belongs to the pipeline thread that calls it (cascades are not shared).
public final class HaarFaceDetector: FaceDetector {
    public struct Options: Sendable {
        public var cascadeDirectory = "/usr/share/opencv4/haarcascades"
        public var faceCascade = "haarcascade_frontalface_alt2.xml"
        public var eyeCascade = "haarcascade_eye.xml"
        public var smileCascade = "haarcascade_smile.xml"
        /// The face pass runs on a gray frame at most this wide (the budget).
        public var maxWorkingWidth = 320
        public var scaleFactor = 1.1
        public var minNeighbors = 3
        /// Smallest face, in working-frame pixels (the cascade's window is 20).
        public var minFaceSize = 20
        /// Only look for faces here (normalized to the frame); nil = everywhere.
        public var regionOfInterest: NormalizedBox?

        public init() {}

        /// Settings for still photos: full resolution up to 1024 px wide.
        public static var stillImage: Options {
            var options = Options()
            options.maxWorkingWidth = 1024
            return options
        }
    }

    /// Face crops are resized to this width for the eye and smile cascades.
    static let featureWidth = 160
    /// Faces narrower than this (frame pixels) are too small to read a smile from.
    static let minSmileFaceWidth = 48.0
    /// The smile cascade fires on many mouths; this many neighbours mean a smile.
    static let smileMinNeighbors = 22
    static let eyeParameters = HaarCascade.Parameters(scaleFactor: 1.1, minNeighbors: 3, minSize: 18, maxSize: 64)
    static let smileParameters = HaarCascade.Parameters(scaleFactor: 1.15, minNeighbors: smileMinNeighbors,
                                                        minSize: 30, maxSize: 0)

    public let options: Options
    public var name: String { "haar" }

    private let faces: HaarCascade
    private let eyes: HaarCascade?
    private let smiles: HaarCascade?

    public init(options: Options = Options()) throws {
        self.options = options
        let directory = options.cascadeDirectory as NSString
        faces = try HaarCascade(path: directory.appendingPathComponent(options.faceCascade))
        eyes = try? HaarCascade(path: directory.appendingPathComponent(options.eyeCascade))
        smiles = try? HaarCascade(path: directory.appendingPathComponent(options.smileCascade))
    }

    public func detect(in frame: ImageBuffer, gray: ImageBuffer?, limit: Int) throws -> [FaceObservation] {
        guard limit > 0 else { return [] }
        let gray = try gray ?? ImageOps.gray(frame)
        let region = options.regionOfInterest.flatMap { $0.pixelRegion(width: gray.width, height: gray.height) }
            ?? (0, 0, gray.width, gray.height)
        let boxes = try faceBoxes(gray, region: region)
            .sorted { $0.w * $0.h > $1.w * $1.h }
            .prefix(limit)
        return try boxes.map { try describe(box: $0, gray: gray) }
    }

    /// Frontal-face hits in frame pixels, found on a reduced, equalized copy of the region.
    private func faceBoxes(_ gray: ImageBuffer, region: (x: Int, y: Int, w: Int, h: Int)) throws
        -> [(x: Double, y: Double, w: Double, h: Double)] {
        let scale = min(1, Double(options.maxWorkingWidth) / Double(region.w))
        let w = max(1, Int(Double(region.w) * scale)), h = max(1, Int(Double(region.h) * scale))
        let work = ImageBuffer(width: w, height: h, channels: 1)
        try ImageOps.resize(gray.cView(x: region.x, y: region.y, width: region.w, height: region.h),
                            into: work.cView, interpolation: .area)
        try OpenCVError.check { slcv_equalize_hist(work.cView, work.cView, $0) }
        let hits = try faces.detect(work.cView, HaarCascade.Parameters(
            scaleFactor: options.scaleFactor, minNeighbors: options.minNeighbors, minSize: options.minFaceSize))
        return hits.map { (Double(region.x) + Double($0.x) / scale, Double(region.y) + Double($0.y) / scale,
                           Double($0.w) / scale, Double($0.h) / scale) }
    }

    private func describe(box: (x: Double, y: Double, w: Double, h: Double), gray: ImageBuffer) throws -> FaceObservation {
        var face = FaceObservation(box: box, score: 1)
        guard let crop = try FeatureCrop(gray: gray, box: box, width: Self.featureWidth) else { return face }
        face.landmarks = try eyeLandmarks(crop)
        face.smile = try smile(crop, faceWidth: box.w)
        return FaceGeometry.withPose(face)
    }

    /// The best eye on each side of the upper face, when both are found.
    private func eyeLandmarks(_ crop: FeatureCrop) throws -> FaceLandmarks? {
        guard let eyes else { return nil }
        let band = crop.band(from: 0.15, to: 0.6)
        let hits = try eyes.detect(band.view, Self.eyeParameters)
        let half = Double(crop.image.width) / 2
        let centres = hits.map { PixelPoint(x: Double($0.x) + Double($0.w) / 2, y: Double(band.top + $0.y) + Double($0.h) / 2) }
        // The image's left eye is the subject's right eye on an upright face.
        func best(_ side: [PixelPoint]) -> PixelPoint? { side.min { abs($0.y - crop.eyeLine) < abs($1.y - crop.eyeLine) } }
        guard let imageLeft = best(centres.filter { $0.x < half }),
              let imageRight = best(centres.filter { $0.x >= half }) else { return nil }
        return FaceLandmarks(rightEye: crop.toFrame(imageLeft), leftEye: crop.toFrame(imageRight))
    }

    /// 1 when the smile cascade fires strongly in the lower face, else 0;
    /// nil when the face is too small or the cascade is missing.
    private func smile(_ crop: FeatureCrop, faceWidth: Double) throws -> Double? {
        guard let smiles, faceWidth >= Self.minSmileFaceWidth else { return nil }
        let band = crop.band(from: 0.55, to: 1.0)
        return try smiles.detect(band.view, Self.smileParameters).isEmpty ? 0 : 1
    }
}

/// A face's gray pixels resized to a fixed width, for the feature cascades.
private struct FeatureCrop {
    let image: ImageBuffer
    let origin: PixelPoint
    let scale: Double
    /// Where eyes sit on a frontal face crop (fraction of height, in crop pixels).
    var eyeLine: Double { Double(image.height) * 0.38 }

    init?(gray: ImageBuffer, box: (x: Double, y: Double, w: Double, h: Double), width: Int) throws {
        let x0 = max(0, Int(box.x)), y0 = max(0, Int(box.y))
        let x1 = min(gray.width, Int(box.x + box.w)), y1 = min(gray.height, Int(box.y + box.h))
        guard x1 - x0 >= 8, y1 - y0 >= 8 else { return nil }
        scale = Double(width) / Double(x1 - x0)
        let height = max(1, Int(Double(y1 - y0) * scale))
        image = ImageBuffer(width: width, height: height, channels: 1)
        origin = PixelPoint(x: Double(x0), y: Double(y0))
        try ImageOps.resize(gray.cView(x: x0, y: y0, width: x1 - x0, height: y1 - y0), into: image.cView,
                            interpolation: .linear)
        try OpenCVError.check { slcv_equalize_hist(image.cView, image.cView, $0) }
    }

    /// A horizontal band of the crop (fractions of its height).
    func band(from top: Double, to bottom: Double) -> (view: slcv_image, top: Int) {
        let y0 = Int(Double(image.height) * top), y1 = max(y0 + 1, Int(Double(image.height) * bottom))
        return (image.cView(x: 0, y: y0, width: image.width, height: min(image.height, y1) - y0), y0)
    }

    func toFrame(_ p: PixelPoint) -> PixelPoint {
        PixelPoint(x: origin.x + p.x / scale, y: origin.y + p.y / scale)
    }
}
