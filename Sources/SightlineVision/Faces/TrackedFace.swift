import Foundation

/// A face as the tracker reports it for one frame: a stable id and the
/// observation with roll and yaw smoothed along the track. On frames where
/// detection did not run, the box (and landmarks) are carried by the track's
/// motion and `isPredicted` is true.
public struct TrackedFace: Sendable, Equatable {
    public var id: Int
    public var observation: FaceObservation
    public var isPredicted: Bool

    public init(id: Int, observation: FaceObservation, isPredicted: Bool) {
        self.id = id
        self.observation = observation
        self.isPredicted = isPredicted
    }
}
