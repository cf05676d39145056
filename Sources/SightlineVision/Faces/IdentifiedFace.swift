import Foundation
import SightlineSupport

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

    /// The face as DESIGN.md's detection object, normalized to the frame:
    /// the observation's own detection plus the track's `id`, and `name` and
    /// `nameConfidence` only when the face was recognised as someone (an
    /// "unknown" answer omits both).
    public func detection(frameWidth: Int, frameHeight: Int) -> Detection {
        var detection = tracked.observation.detection(frameWidth: frameWidth, frameHeight: frameHeight)
        detection.id = tracked.id
        if let identity, let name = identity.name {
            detection.name = name
            detection.nameConfidence = identity.confidence.rounded(toPlaces: 2)
        }
        return detection
    }
}
