import CSightlineOpenCV
import Foundation

/// The fallback face detector: OpenCV's Haar cascades from Debian's
/// opencv-data. The frontal-face cascade runs on a reduced, equalized gray
/// frame (the tutorial's full-size 640x480 pass costs about 150 ms); the eye
/// cascade runs inside each face for eye landmarks and roll, and
/// `FaceAttributeReader` reads `smile` and `eyesClosed`.
///
/// Haar gives no confidence, so every face has score 1; there is no nose, so
/// yaw is left unknown (nil).
///
/// Belongs to the one thread that calls it (see FaceDetector; cascades are not shared).
public final class HaarFaceDetector: FaceDetector {
    public struct Options: Sendable {
        public var cascadeDirectory = "/usr/share/opencv4/haarcascades"
        public var faceCascade = "haarcascade_frontalface_alt2.xml"
        public var eyeCascade = "haarcascade_eye.xml"
        /// Smile and closed eyes (nil: not read).
        public var attributes: FaceAttributeReader.Options? = FaceAttributeReader.Options()
        /// The face pass runs on a gray frame at most this wide (the budget):
        /// at 256 the smallest face found is 20/256 of the frame's width
        /// (50 px at 640x480) and the pass costs about 18-25 ms per
        /// 640x480 frame on one core here; at 320 it was 29-40 ms.
        public var maxWorkingWidth = 256
        public var scaleFactor = 1.1
        public var minNeighbors = 3
        /// Smallest face, in working-frame pixels (the cascade's window is 20).
        public var minFaceSize = 20
        /// Only look for faces here (normalized to the frame); nil = everywhere.
        public var regionOfInterest: NormalizedBox?
        /// The eye search resizes the face to this width and steps the eye
        /// cascade's scale by this factor. Live frames use a small, coarse
        /// search (a few ms per face); stills a larger, finer one that also
        /// finds smaller eyes (grace_hopper.jpg), at about three times the cost.
        public var eyeSearchWidth = 160
        public var eyeScaleFactor = 1.1

        public init() {}

        /// Settings for still photos: full resolution up to 1024 px wide.
        public static var stillImage: Options {
            var options = Options()
            options.maxWorkingWidth = 1024
            options.eyeSearchWidth = 240
            options.eyeScaleFactor = 1.05
            return options
        }
    }

    /// Eye sizes searched, as fractions of the eye search width (the lower
    /// bound is the cascade's 20 px window at 240). A coarse scale step makes
    /// the grouping of neighbours depend on where the pyramid's steps fall.
    static let maxEyeFraction = 1.0 / 3
    var eyeBandParameters: HaarCascade.Parameters {
        HaarCascade.Parameters(scaleFactor: options.eyeScaleFactor, minNeighbors: 3, minSize: 20,
                               maxSize: Int(Double(options.eyeSearchWidth) * Self.maxEyeFraction))
    }

    public let options: Options
    public var name: String { "haar" }

    private let faces: HaarCascade
    private let eyes: HaarCascade?
    private let attributes: FaceAttributeReader?

    public init(options: Options = Options()) throws {
        self.options = options
        let directory = options.cascadeDirectory as NSString
        faces = try HaarCascade(path: directory.appendingPathComponent(options.faceCascade))
        eyes = try? HaarCascade(path: directory.appendingPathComponent(options.eyeCascade))
        attributes = options.attributes.map { FaceAttributeReader(options: $0) }
    }

    public func detect(in frame: ImageBuffer, gray: ImageBuffer?, limit: Int) throws -> [FaceObservation] {
        guard limit > 0 else { return [] }
        let gray = try gray ?? ImageOps.gray(frame)
        let region = options.regionOfInterest.flatMap { $0.pixelRegion(width: gray.width, height: gray.height) }
            ?? PixelRect(x: 0, y: 0, w: gray.width, h: gray.height)
        let boxes = try faceBoxes(gray, region: region)
            .sorted { $0.w * $0.h > $1.w * $1.h }
            .prefix(limit)
        return try boxes.map { try describe(box: $0, gray: gray) }
    }

    /// Frontal-face hits in frame pixels, found on a reduced, equalized copy of the region.
    private func faceBoxes(_ gray: ImageBuffer, region: PixelRect<Int>) throws
        -> [PixelRect<Double>] {
        let scale = min(1, Double(options.maxWorkingWidth) / Double(region.w))
        let w = max(1, Int(Double(region.w) * scale)), h = max(1, Int(Double(region.h) * scale))
        let work = ImageBuffer(width: w, height: h, channels: 1)
        try ImageOps.resize(gray.cView(x: region.x, y: region.y, width: region.w, height: region.h),
                            into: work.cView, interpolation: .area)
        try OpenCVError.check { slcv_equalize_hist(work.cView, work.cView, $0) }
        let hits = try faces.detect(work.cView, HaarCascade.Parameters(
            scaleFactor: options.scaleFactor, minNeighbors: options.minNeighbors, minSize: options.minFaceSize))
        return hits.map { PixelRect(x: Double(region.x) + Double($0.x) / scale, y: Double(region.y) + Double($0.y) / scale,
                                    w: Double($0.w) / scale, h: Double($0.h) / scale) }
    }

    private func describe(box: PixelRect<Double>, gray: ImageBuffer) throws -> FaceObservation {
        var face = FaceObservation(box: box, score: 1)
        face.landmarks = try eyeLandmarks(box, gray: gray)
        face = FaceGeometry.withPose(face)
        return try attributes?.read(face, gray: gray) ?? face
    }

    /// The most plausible pair of eyes in the upper face, or nil when no pair
    /// fits. The eye cascade runs on the eye band at `eyeSearchWidth`, first on the
    /// plain gray pixels (equalizing a whole face washes out eyes behind
    /// glasses), then on the equalized crop; every pair of hits is scored by
    /// face geometry (`EyePair`) and the best one kept.
    private func eyeLandmarks(_ face: PixelRect<Double>, gray: ImageBuffer) throws
        -> FaceLandmarks? {
        guard let eyes, let crop = try EyeBand(gray: gray, face: face, width: options.eyeSearchWidth) else { return nil }
        for equalized in [false, true] {
            if equalized { try OpenCVError.check { slcv_equalize_hist(crop.image.cView, crop.image.cView, $0) } }
            let hits = try eyes.detect(crop.image.cView, eyeBandParameters)
            let candidates = hits.map { EyePair.Eye(x: Double($0.x) + Double($0.w) / 2,
                                                    y: Double($0.y) + Double($0.h) / 2, size: Double($0.w)) }
            if let pair = EyePair.best(candidates, faceWidth: Double(options.eyeSearchWidth), centreX: crop.centreX,
                                         eyeLine: crop.eyeLine) {
                // The image's left eye is the subject's right eye on an upright face.
                return FaceLandmarks(rightEye: crop.toFrame(pair.left), leftEye: crop.toFrame(pair.right))
            }
        }
        return nil
    }
}

/// The upper part of a face (where the eyes are), gray and unequalized,
/// resized so that the face is `width` pixels wide.
private struct EyeBand {
    /// Fractions of the face box's height the band spans.
    static let top = 0.2, bottom = 0.58
    let image: ImageBuffer
    let origin: PixelPoint
    let scale: Double
    /// Where eyes sit on a frontal face (38 % down the box), and the face's
    /// centre line, in band pixels.
    let eyeLine: Double
    let centreX: Double

    init?(gray: ImageBuffer, face: PixelRect<Double>, width: Int) throws {
        let x0 = max(0, Int(face.x)), x1 = min(gray.width, Int(face.x + face.w))
        let y0 = max(0, Int(face.y + face.h * Self.top)), y1 = min(gray.height, Int(face.y + face.h * Self.bottom))
        guard x1 - x0 >= 8, y1 - y0 >= 4 else { return nil }
        scale = Double(width) / face.w
        let size = (w: max(1, Int(Double(x1 - x0) * scale)), h: max(1, Int(Double(y1 - y0) * scale)))
        image = ImageBuffer(width: size.w, height: size.h, channels: 1)
        origin = PixelPoint(x: Double(x0), y: Double(y0))
        eyeLine = (face.y + 0.38 * face.h - Double(y0)) * scale
        centreX = (face.x + face.w / 2 - Double(x0)) * scale
        try ImageOps.resize(gray.cView(x: x0, y: y0, width: x1 - x0, height: y1 - y0), into: image.cView,
                            interpolation: .linear)
    }

    func toFrame(_ p: PixelPoint) -> PixelPoint {
        PixelPoint(x: origin.x + p.x / scale, y: origin.y + p.y / scale)
    }
}

/// Picks two eye-cascade hits that look like a face's eyes: similar size,
/// roughly level, 0.25-0.6 face widths apart, about one eye's width each
/// side of the face's centre line, near the usual eye line.
enum EyePair {
    struct Eye: Equatable { var x, y, size: Double }

    static let minSeparation = 0.25, maxSeparation = 0.6
    /// Steepest eye line accepted (the frontal-face cascade finds little beyond this).
    static let maxTiltDegrees = 25.0
    /// Smaller eye over larger at least this.
    static let minSizeRatio = 0.6

    /// The pair (image-left, image-right) with the lowest geometry cost, in
    /// the hits' pixels; nil when no pair is plausible.
    static func best(_ eyes: [Eye], faceWidth: Double, centreX: Double, eyeLine: Double)
        -> (left: PixelPoint, right: PixelPoint)? {
        var best: (cost: Double, left: Eye, right: Eye)?
        for a in eyes {
            for b in eyes where a.x < b.x {
                let dx = b.x - a.x, dy = b.y - a.y
                guard dx >= minSeparation * faceWidth, dx <= maxSeparation * faceWidth,
                      abs(atan2(dy, dx)) * 180 / .pi <= maxTiltDegrees,
                      min(a.size, b.size) / max(a.size, b.size) >= minSizeRatio else { continue }
                let centreOffset = abs((a.x + b.x) / 2 - centreX) / faceWidth
                let lineOffset = abs((a.y + b.y) / 2 - eyeLine) / faceWidth
                let cost = abs(dy) / dx + (1 - min(a.size, b.size) / max(a.size, b.size)) + 2 * centreOffset + lineOffset
                if best == nil || cost < best!.cost { best = (cost, a, b) }
            }
        }
        guard let best else { return nil }
        return (PixelPoint(x: best.left.x, y: best.left.y), PixelPoint(x: best.right.x, y: best.right.y))
    }
}
