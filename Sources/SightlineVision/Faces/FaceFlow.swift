import CSightlineOpenCV
import Foundation

/// How a face moved from one frame to another, measured by sparse optical
/// flow (pyramidal Lucas-Kanade, `slcv_track_points`) on points spread over
/// the face: a similarity (shift, turn and scale about the face), so a box
/// carried by it follows the face's drift, its zoom and its roll between
/// detection passes, with no velocity guess and no lag.
///
/// The points are a grid over the face box's inner part plus its landmarks;
/// points the backward pass does not bring back (a flat cheek, an occluder,
/// the face leaving) are dropped, and the similarity is fitted by least
/// squares twice, the second time without the points the first fit explains
/// worst; points that do not agree on that motion (most of them off it: an
/// occluder moving across the face) give no motion. Written here rather
/// than taken from cv::estimateAffinePartial2D: that one samples at random
/// (RANSAC, LMedS), and a tracker's output should be the same on the same
/// frames; with a few dozen points that passed the forward-backward check, a
/// trimmed fit is enough.
///
/// Thread ownership: the pipeline thread (FaceStage); it keeps point
/// buffers between calls. Not Sendable.
package final class FaceFlow {
    package struct Options {
        /// Points along each side of the grid over the face (plus its five landmarks).
        var gridSide = 4
        /// The grid covers the box's middle, this share of its width and height.
        var gridSpan = 0.7
        /// Pixels a point may come back away from where it started.
        var maxForwardBackward = 1.0
        /// Points that must pass to trust a motion.
        var minPoints = 8
        /// Pyramid levels above the image (each doubles the motion it follows).
        package var levels = 2
        /// A step that turns or scales more than this between two frames is
        /// not a face's motion (the points jumped to something else).
        var maxStepDegrees = 30.0
        var maxStepScale = 1.4
        /// The points must agree on one motion: at least this share of those
        /// that passed must land within `agreementPixels` (or `agreementShareOfSize`
        /// of the face, if more) of where the fitted motion puts them.
        var minAgreeingShare = 0.5
        var agreementPixels = 1.0
        var agreementShareOfSize = 0.01
    }

    /// One measured motion: maps a point of the first frame to where it is in
    /// the second; `degrees` is its turn, clockwise in image coordinates.
    package struct Motion: Equatable {
        var transform: AffineTransform
        var degrees: Double
        var scale: Double
        /// Points that passed and were kept by the fit.
        var points: Int
    }

    package let options: Options
    private var from: [Float] = []
    private var moved: [Float] = []
    private var status: [UInt8] = []
    private var error: [Float] = []

    package init(options: Options = Options()) { self.options = options }

    /// How the face in `box` of `previous` (with its `landmarks`, if known)
    /// moved to `next`; nil when the images differ in size or the points do
    /// not agree on a face's motion. Builds a small pyramid of each image
    /// around the face (`motion(of:landmarks:from:to:)` with `FlowPyramid`s
    /// reads whole frames' pyramids instead).
    package func motion(of box: PixelRect<Double>, landmarks: FaceLandmarks?, from previous: ImageBuffer,
                to next: ImageBuffer) throws -> Motion? {
        guard previous.channels == 1, next.channels == 1, previous.width == next.width,
              previous.height == next.height, box.w >= 4, box.h >= 4 else { return nil }
        // The search looks around the face as far as it may have moved.
        let area = Self.searchArea(of: box, width: previous.width, height: previous.height)
        let (x0, y0, x1, y1) = (area.x, area.y, area.x + area.w, area.y + area.h)
        guard area.w >= 8, area.h >= 8 else { return nil }
        let count = placePoints(on: box, landmarks: landmarks, in: area)
        guard count >= options.minPoints else { return nil }
        let window = Self.window(for: box)
        let before = previous.cView(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
        let after = next.cView(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
        try OpenCVError.check { err in
            slcv_track_points(before, after, from, Int32(count), Int32(window), Int32(options.levels), &moved,
                              &status, &error, err)
        }
        return fitted(count: count, origin: (Double(x0), Double(y0)), size: max(box.w, box.h))
    }

    /// As `motion(of:landmarks:from:to:)`, on the pyramids of two whole frames.
    package func motion(of box: PixelRect<Double>, landmarks: FaceLandmarks?, from previous: FlowPyramid,
                        to next: FlowPyramid) throws -> Motion? {
        guard previous.width == next.width, previous.height == next.height, box.w >= 4, box.h >= 4 else { return nil }
        let count = placePoints(on: box, landmarks: landmarks,
                                in: PixelRect(x: 0, y: 0, w: previous.width, h: previous.height))
        guard count >= options.minPoints else { return nil }
        let window = Self.window(for: box)
        try OpenCVError.check { err in
            slcv_track_points_in_pyramids(previous.pointer, next.pointer, from, Int32(count), Int32(window), &moved,
                                          &status, &error, err)
        }
        return fitted(count: count, origin: (0, 0), size: max(box.w, box.h))
    }

    /// Whether the faces in `boxes` of a `width` x `height` frame are better
    /// measured on whole-frame pyramids: each face's own measure builds two
    /// pyramids of its search area, a whole frame's costs one pyramid of the
    /// frame (the last frame's is kept). On 640x480 one frame's pyramid took
    /// 0.16 ms, a 100-pixel face's pair 0.08 (this machine).
    package static func prefersWholeFrame(_ boxes: [PixelRect<Double>], width: Int, height: Int) -> Bool {
        let areas = boxes.reduce(0) { sum, box in
            let area = searchArea(of: box, width: width, height: height)
            return sum + area.w * area.h
        }
        return 2 * areas > width * height
    }

    /// The part of a frame a face's points are followed in: the box and as
    /// far around it as the face may have moved.
    static func searchArea(of box: PixelRect<Double>, width: Int, height: Int) -> PixelRect<Int> {
        let size = max(box.w, box.h)
        let margin = max(0.6 * size, 16)
        let x0 = max(0, Int((box.x - margin).rounded(.down))), y0 = max(0, Int((box.y - margin).rounded(.down)))
        let x1 = min(width, Int((box.x + box.w + margin).rounded(.up)))
        let y1 = min(height, Int((box.y + box.h + margin).rounded(.up)))
        return PixelRect(x: x0, y: y0, w: max(0, x1 - x0), h: max(0, y1 - y0))
    }

    /// A window a quarter of the face (odd, 9 to 11 pixels, at most
    /// `FlowPyramid.window`): large enough to hold texture, small enough to
    /// stay on the face. With 4x4 grid points and two pyramid levels (a step
    /// of up to about 20 pixels a frame) this is a quarter of the work of 21
    /// pixels, 5x5 points and three levels. 15 pixels before cost the pan
    /// past 20 faces (scripts/make-face-crowd.py --faces people) about 0.01 cores more, with
    /// the same roll error on the live face video (scripts/live-faces.py:
    /// median 2.4-2.8 degrees, p90 6.5-8.4, both ways) and the pan's faces
    /// found as often (0.98).
    static func window(for box: PixelRect<Double>) -> Int {
        min(FlowPyramid.window, max(9, Int(max(box.w, box.h) / 4) | 1))
    }

    /// Puts the grid over `box` and its landmarks into `from` (pixels of
    /// `area`, whose points only) and sizes the result buffers; the count.
    private func placePoints(on box: PixelRect<Double>, landmarks: FaceLandmarks?, in area: PixelRect<Int>) -> Int {
        from.removeAll(keepingCapacity: true)
        let (x0, y0) = (Double(area.x), Double(area.y))
        let (x1, y1) = (Double(area.x + area.w), Double(area.y + area.h))
        func add(_ x: Double, _ y: Double) {
            guard x >= x0, y >= y0, x < x1, y < y1 else { return }
            from.append(Float(x - x0))
            from.append(Float(y - y0))
        }
        let side = max(2, options.gridSide)
        for row in 0..<side {
            for column in 0..<side {
                let u = (1 - options.gridSpan) / 2 + options.gridSpan * Double(column) / Double(side - 1)
                let v = (1 - options.gridSpan) / 2 + options.gridSpan * Double(row) / Double(side - 1)
                add(box.x + u * box.w, box.y + v * box.h)
            }
        }
        if let landmarks {
            for point in [landmarks.rightEye, landmarks.leftEye, landmarks.nose, landmarks.mouthRight,
                          landmarks.mouthLeft].compactMap({ $0 }) {
                add(point.x, point.y)
            }
        }
        let count = from.count / 2
        moved = [Float](repeating: 0, count: 2 * count)
        status = [UInt8](repeating: 0, count: count)
        error = [Float](repeating: 0, count: count)
        return count
    }

    /// The motion the `count` followed points agree on (pixels of an area
    /// whose corner is `origin`), for a face `size` pixels across; nil when
    /// they do not agree on a face's motion.
    private func fitted(count: Int, origin: (x: Double, y: Double), size: Double) -> Motion? {
        var pairs: [(PixelPoint, PixelPoint)] = []
        for i in 0..<count where status[i] != 0 && Double(error[i]) <= options.maxForwardBackward {
            pairs.append((PixelPoint(x: Double(from[2 * i]) + origin.x, y: Double(from[2 * i + 1]) + origin.y),
                          PixelPoint(x: Double(moved[2 * i]) + origin.x, y: Double(moved[2 * i + 1]) + origin.y)))
        }
        guard pairs.count >= options.minPoints, var fit = Self.similarity(pairs) else { return nil }
        // Refit without the quarter of the points the first fit explains worst
        // (a point that slid along an edge, or onto the background).
        let residuals = pairs.map { fit.apply($0.0).distance(to: $0.1) }
        let cut = residuals.sorted()[max(options.minPoints, pairs.count * 3 / 4) - 1]
        let kept = zip(pairs, residuals).filter { $0.1 <= max(cut, 0.25) }.map(\.0)
        if kept.count >= options.minPoints, let refit = Self.similarity(kept) { fit = refit }
        // Something moving across the face (a hand, the demo's template
        // sliding and shrinking over its eyes) takes some of the points with
        // it: two motions, and a fit of both is neither's. On the demo the
        // fit turned the face by 5-14 degrees a frame where it turned 1-1.5,
        // and its points landed 3-6 pixels from the fit where a face's own
        // land within a fifth of a pixel; the tracker carried its roll that
        // way (40-90 degrees off when passes were slow). Such a frame has no
        // motion: the face is carried by its velocity and roll rate.
        let tolerance = max(options.agreementPixels, options.agreementShareOfSize * size)
        let agreeing = pairs.filter { fit.apply($0.0).distance(to: $0.1) <= tolerance }.count
        guard agreeing >= options.minPoints, Double(agreeing) >= options.minAgreeingShare * Double(pairs.count)
        else { return nil }
        let scale = (fit.a * fit.a + fit.d * fit.d).squareRoot()
        let degrees = atan2(fit.d, fit.a) * 180 / .pi
        guard abs(degrees) <= options.maxStepDegrees, scale <= options.maxStepScale,
              scale >= 1 / options.maxStepScale else { return nil }
        return Motion(transform: fit, degrees: degrees, scale: scale, points: kept.count)
    }

    /// The least-squares similarity (x' = a x - b y + tx, y' = b x + a y + ty)
    /// taking each first point to its second; nil for fewer than two
    /// distinct points.
    static func similarity(_ pairs: [(PixelPoint, PixelPoint)]) -> AffineTransform? {
        guard pairs.count >= 2 else { return nil }
        let n = Double(pairs.count)
        let mx = pairs.reduce(0) { $0 + $1.0.x } / n, my = pairs.reduce(0) { $0 + $1.0.y } / n
        let nx = pairs.reduce(0) { $0 + $1.1.x } / n, ny = pairs.reduce(0) { $0 + $1.1.y } / n
        var dot = 0.0, cross = 0.0, norm = 0.0
        for (p, q) in pairs {
            let px = p.x - mx, py = p.y - my, qx = q.x - nx, qy = q.y - ny
            dot += px * qx + py * qy
            cross += px * qy - py * qx
            norm += px * px + py * py
        }
        guard norm > 1e-9 else { return nil }
        let a = dot / norm, b = cross / norm
        return AffineTransform(a: a, b: -b, c: nx - a * mx + b * my, d: b, e: a, f: ny - b * mx - a * my)
    }
}
