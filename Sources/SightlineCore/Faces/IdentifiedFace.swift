import Foundation

/// A tracked face with the name the recognizer gave it, if any: what the
/// pipeline turns into a `/ws` face detection.
public struct IdentifiedFace: Sendable, Equatable {
    public var tracked: TrackedFace
    /// nil when nobody is enrolled or the track has not been recognised yet.
    public var identity: FaceIdentity?

    public init(tracked: TrackedFace, identity: FaceIdentity?) {
        self.tracked = tracked
        self.identity = identity
    }

    /// The face as DESIGN.md's detection object, normalized to the frame.
    /// `name` and `nameConfidence` only when the face was recognised as
    /// someone (an "unknown" answer omits both).
    public func detection(frameWidth: Int, frameHeight: Int) -> Detection {
        let observation = tracked.observation
        let box = NormalizedBox(pixelX: observation.box.x, pixelY: observation.box.y, width: observation.box.w,
                                height: observation.box.h, frameWidth: frameWidth, frameHeight: frameHeight)
        let named = identity.flatMap { identity in identity.name.map { ($0, identity.confidence) } }
        return Detection(kind: .face, id: tracked.id, score: observation.score.rounded(toPlaces: 4), box: box.rounded,
                         roll: observation.roll?.rounded(toPlaces: 1), yaw: observation.yaw?.rounded(toPlaces: 1),
                         landmarks: observation.landmarks.map { Self.normalized($0, frameWidth, frameHeight) },
                         name: named?.0, nameConfidence: named?.1.rounded(toPlaces: 2),
                         smile: observation.smile?.rounded(toPlaces: 2), eyesClosed: observation.eyesClosed)
    }

    static func normalized(_ landmarks: FaceLandmarks, _ width: Int, _ height: Int) -> [String: [Double]] {
        func point(_ p: PixelPoint) -> [Double] {
            [(p.x / Double(width)).rounded(toPlaces: 4), (p.y / Double(height)).rounded(toPlaces: 4)]
        }
        var named = ["rightEye": point(landmarks.rightEye), "leftEye": point(landmarks.leftEye)]
        named["nose"] = landmarks.nose.map(point)
        named["mouthRight"] = landmarks.mouthRight.map(point)
        named["mouthLeft"] = landmarks.mouthLeft.map(point)
        return named
    }
}
