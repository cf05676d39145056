import Foundation

/// Small pure helpers the tracker uses on pixel boxes and angles.
package enum TrackGeometry {
    package static func centre(_ box: PixelRect<Double>) -> PixelPoint { box.centre }

    /// A box of the same size moved so its centre is at `centre`.
    static func box(_ box: PixelRect<Double>, centredAt centre: PixelPoint) -> PixelRect<Double> {
        PixelRect(x: centre.x - box.w / 2, y: centre.y - box.h / 2, w: box.w, h: box.h)
    }

    static func intersectionOverUnion(_ a: PixelRect<Double>, _ b: PixelRect<Double>) -> Double {
        a.intersectionOverUnion(b)
    }

    /// Geometric mean of width and height: a box's "size" for distances.
    static func size(_ box: PixelRect<Double>) -> Double { max((box.w * box.h).squareRoot(), 1) }

    /// An angle in degrees brought into (-180, 180].
    package static func wrapDegrees(_ angle: Double) -> Double {
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
