/// How a sink uses faces now (`FrameSink.faceUse`); the face stage paces its
/// passes by the most any sink asks (`FaceDetectionPolicy`).
public enum FaceUse: Int, Sendable, Comparable {
    /// Not at all: faces are looked for at the idle rate only, so an event
    /// can start.
    case none
    /// A face is followed for an event and nothing else uses faces: its boxes
    /// go into the clip and its end is seen at once, while new faces may come
    /// a pass later. Settled faces (none new, none lost on the last pass) are
    /// passed over at the policy's `idleRate`.
    case following
    /// Someone sees the boxes live (a viewer, a relay, a broker): passes at
    /// the full rate while faces are tracked or the picture changes.
    case live

    public static func < (lhs: FaceUse, rhs: FaceUse) -> Bool { lhs.rawValue < rhs.rawValue }
}
