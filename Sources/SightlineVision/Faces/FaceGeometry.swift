import Foundation

/// Pure geometry for faces: roll from the eye line, yaw from where the nose
/// sits between the eyes (and mouth), IoU and non-maximum suppression.
/// Conventions are DESIGN.md's: roll in degrees, clockwise positive in image
/// coordinates (y down), in (-180, 180]; yaw in [-90, 90], positive when the
/// face turns towards the image's right.
public enum FaceGeometry {
    /// Two boxes overlapping at least this much (IoU) are taken for the same
    /// face: a tracked face and a pass's, or the faces of two passes.
    public static let sameFaceOverlap = 0.3

    /// How far the nose tip stands in front of the eye/mouth plane, as a
    /// fraction of the distance between the eyes (anthropometric average:
    /// about 35 mm in front of a 63 mm eye line).
    public static let noseDepthPerEyeDistance = 0.55

    /// Roll of the eye line. `rightEye` is the subject's right eye (the
    /// image's left on an upright, unmirrored face), so an upright face is 0°.
    public static func roll(rightEye: PixelPoint, leftEye: PixelPoint) -> Double {
        normalizedDegrees(atan2(leftEye.y - rightEye.y, leftEye.x - rightEye.x) * 180 / .pi)
    }

    /// Yaw from the nose's offset along the eye line from the face's centre
    /// line, against the eye distance: offset / eyeDistance = depth * tan(yaw).
    /// nil when the eyes coincide or the nose is unknown.
    public static func yaw(_ landmarks: FaceLandmarks) -> Double? {
        guard let nose = landmarks.nose else { return nil }
        let dx = landmarks.leftEye.x - landmarks.rightEye.x
        let dy = landmarks.leftEye.y - landmarks.rightEye.y
        let eyeDistance = (dx * dx + dy * dy).squareRoot()
        guard eyeDistance > 0 else { return nil }
        let axis = (x: dx / eyeDistance, y: dy / eyeDistance)
        let centre = faceCentre(landmarks)
        let offset = (nose.x - centre.x) * axis.x + (nose.y - centre.y) * axis.y
        let degrees = atan(offset / eyeDistance / noseDepthPerEyeDistance) * 180 / .pi
        return min(90, max(-90, degrees))
    }

    /// The midpoint of the eyes, or when both mouth corners are known the
    /// midpoint of the eye and mouth midpoints (a point on the face plane
    /// under the nose for a frontal face).
    static func faceCentre(_ landmarks: FaceLandmarks) -> PixelPoint {
        let eyes = midpoint(landmarks.rightEye, landmarks.leftEye)
        guard let mouthRight = landmarks.mouthRight, let mouthLeft = landmarks.mouthLeft else { return eyes }
        return midpoint(eyes, midpoint(mouthRight, mouthLeft))
    }

    static func midpoint(_ a: PixelPoint, _ b: PixelPoint) -> PixelPoint {
        PixelPoint(x: (a.x + b.x) / 2, y: (a.y + b.y) / 2)
    }

    /// Degrees folded into (-180, 180].
    public static func normalizedDegrees(_ degrees: Double) -> Double {
        var value = degrees.truncatingRemainder(dividingBy: 360)
        if value <= -180 { value += 360 }
        if value > 180 { value -= 360 }
        return value
    }

    public static func intersectionOverUnion(_ a: PixelRect<Double>, _ b: PixelRect<Double>) -> Double {
        a.intersectionOverUnion(b)
    }

    /// The item whose box overlaps `target` most, if by at least
    /// `sameFaceOverlap` IoU: the same face in another pass, or its track.
    static func sameFace<T>(_ target: PixelRect<Double>, in items: [T],
                            box: (T) -> PixelRect<Double>) -> T? {
        guard let best = items.max(by: {
            intersectionOverUnion(box($0), target) < intersectionOverUnion(box($1), target)
        }) else { return nil }
        return intersectionOverUnion(box(best), target) >= sameFaceOverlap ? best : nil
    }

    /// Greedy non-maximum suppression: the highest scores first, dropping
    /// any face overlapping a kept one by more than `iouThreshold`; at most `limit`.
    public static func suppressed(_ faces: [FaceObservation], iouThreshold: Double, limit: Int) -> [FaceObservation] {
        var kept: [FaceObservation] = []
        for face in faces.sorted(by: { $0.score > $1.score }) {
            guard kept.count < limit else { break }
            if kept.allSatisfy({ intersectionOverUnion($0.box, face.box) <= iouThreshold }) { kept.append(face) }
        }
        return kept
    }

    /// Fills roll and yaw from the landmarks (nil where they cannot be measured).
    public static func withPose(_ face: FaceObservation) -> FaceObservation {
        var face = face
        if let landmarks = face.landmarks {
            face.roll = roll(rightEye: landmarks.rightEye, leftEye: landmarks.leftEye)
            face.yaw = yaw(landmarks)
        }
        return face
    }
}
