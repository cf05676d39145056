import Foundation

/// Small pure helpers the tracker uses on pixel boxes and angles.
package enum TrackGeometry {
    package typealias Box = (x: Double, y: Double, w: Double, h: Double)

    static func centre(_ box: Box) -> PixelPoint { PixelPoint(x: box.x + box.w / 2, y: box.y + box.h / 2) }

    /// A box of the same size moved so its centre is at `centre`.
    static func box(_ box: Box, centredAt centre: PixelPoint) -> Box {
        (x: centre.x - box.w / 2, y: centre.y - box.h / 2, w: box.w, h: box.h)
    }

    static func intersectionOverUnion(_ a: Box, _ b: Box) -> Double {
        let ix = max(0, min(a.x + a.w, b.x + b.w) - max(a.x, b.x))
        let iy = max(0, min(a.y + a.h, b.y + b.h) - max(a.y, b.y))
        let intersection = ix * iy
        let union = a.w * a.h + b.w * b.h - intersection
        return union > 0 ? intersection / union : 0
    }

    /// Geometric mean of width and height: a box's "size" for distances.
    static func size(_ box: Box) -> Double { max((box.w * box.h).squareRoot(), 1) }

    /// An angle in degrees brought into (-180, 180].
    static func wrapDegrees(_ angle: Double) -> Double {
        var wrapped = angle.truncatingRemainder(dividingBy: 360)
        if wrapped <= -180 { wrapped += 360 }
        if wrapped > 180 { wrapped -= 360 }
        return wrapped
    }

    static func shifted(_ landmarks: FaceLandmarks, by dx: Double, _ dy: Double) -> FaceLandmarks {
        func move(_ p: PixelPoint) -> PixelPoint { PixelPoint(x: p.x + dx, y: p.y + dy) }
        return FaceLandmarks(rightEye: move(landmarks.rightEye), leftEye: move(landmarks.leftEye),
                             nose: landmarks.nose.map(move), mouthRight: landmarks.mouthRight.map(move),
                             mouthLeft: landmarks.mouthLeft.map(move))
    }
}
