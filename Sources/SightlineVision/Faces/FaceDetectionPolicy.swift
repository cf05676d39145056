import Foundation

/// When the face worker runs a detection pass. Between passes the tracker
/// carries every face on every frame, so passes are spent only where they
/// find something new:
/// - `active`: faces are tracked, or the picture changed since the last pass
///   (SceneChangeProbe) — up to `maxRate` passes a second;
/// - `still`: nothing tracked and nothing changed — `idleRate` passes a
///   second, so a face that appears without changing the picture much (a
///   slow walk in the distance) is still found within 1 / idleRate seconds;
/// - in any mode, the 2nd to 4th passes on a new picture (after a cut, or
///   the first frames) and one pass every `fineEverySeconds` are fine
///   passes, which find faces too small or tilted for the others (at about
///   four times the cost); the faces they find are kept between them by the
///   passes' confirming crops (YuNetDetector).
/// - tracked faces that the last pass found settled (no face new to the
///   tracker, none lost) are `active` at `settledRate` only in a crowd
///   (`crowdFaces` or more tracked), and at `idleRate` whenever only an event
///   follows them (nobody sees them live: the face stage's
///   `FaceUse.following`; the clip's boxes move with the faces between
///   passes, and its pre-capture holds what came before a late pass): optical
///   flow keeps every box on its face between passes, and a pass that finds
///   something new or loses a face goes back to `maxRate` at once. Fewer
///   faces seen live keep `maxRate`, so a face that joins them is boxed at
///   once. A crowd's fine passes come every `crowdFineFactor` times
///   `fineEverySeconds`, and so do the fine passes of a camera nobody
///   watches live (`unwatchedFineFactor`: a small or tilted face an event
///   follows is found up to 3 s late, which the clip's pre-capture covers;
///   at the idle rate a fine pass was half of all passes and two thirds of
///   the face work at 1080p).
/// - `unwatched`: nobody consumes faces live (no WebSocket or MJPEG viewer and
///   no MQTT broker) — `idleRate` passes a second whatever the scene; events
///   are still recorded, starting at most 1 / idleRate seconds late.
public struct FaceDetectionPolicy: Sendable, Equatable {
    public enum Mode: String, Sendable, CaseIterable {
        case active, still, unwatched
    }

    /// Passes a second at most while faces are tracked or the scene changes.
    public var maxRate: Double
    /// Passes a second on a still scene without faces, and while unwatched.
    public var idleRate: Double

    /// Seconds between fine passes at most (0: none but those after a cut).
    public var fineEverySeconds: Double
    /// Fine passes that follow the first on a new picture (one for each of
    /// YuNet's fine turns, so every tilt is looked for at once).
    public var finePassesOnNewPicture = defaultFinePassesOnNewPicture
    public static let defaultFinePassesOnNewPicture = 3

    /// Tracked faces that make a crowd (nil: never a crowd; the detector's
    /// `YuNetDetector.liveCrowdFaces`).
    public var crowdFaces: Int? = 8
    /// Passes a second at most while the tracked faces are settled (see above).
    public var settledRate = 5.0
    /// A crowd's fine passes are this many times further apart.
    public var crowdFineFactor = 2.0
    /// Fine passes are this many times further apart while nobody sees
    /// faces live (nothing but events follow them).
    public var unwatchedFineFactor = 3.0
    /// Tracks optical flow measures on one frame at most, and in a crowd
    /// (the others move by their velocity on that frame and are measured on
    /// a later one, those measured longest ago first).
    public var flowFacesPerFrame = 8
    public var crowdFlowFacesPerFrame = 4

    public init(maxRate: Double = 10, idleRate: Double = 2, fineEverySeconds: Double = 1) {
        self.maxRate = maxRate
        self.idleRate = idleRate
        self.fineEverySeconds = fineEverySeconds
    }

    /// Whether the pass about to start is fine: the 2nd to
    /// (`finePassesOnNewPicture` + 1)-th on a new picture (the first is the
    /// usual one, so large faces are boxed at once), or the first
    /// `fineEverySeconds` after the last fine one.
    /// `live`: someone sees the faces live (else `unwatchedFineFactor` applies).
    public func fine(passesOnPicture: Int, secondsSinceFine: Double, crowd: Bool = false, live: Bool = true) -> Bool {
        guard passesOnPicture > 0 else { return false }
        let every = fineEverySeconds * (crowd ? crowdFineFactor : 1) * (live ? 1 : unwatchedFineFactor)
        return passesOnPicture <= finePassesOnNewPicture
            || (every > 0 && secondsSinceFine >= every * 0.95)
    }

    /// Tracks optical flow may measure on a frame where `tracked` are shown.
    public func flowBudget(tracked: Int) -> Int {
        isCrowd(tracked: tracked) ? crowdFlowFacesPerFrame : flowFacesPerFrame
    }

    /// Whether `tracked` faces make a crowd.
    public func isCrowd(tracked: Int) -> Bool {
        crowdFaces.map { tracked >= $0 } ?? false
    }

    public func mode(tracking: Bool, changed: Bool, watched: Bool) -> Mode {
        guard watched else { return .unwatched }
        return tracking || changed ? .active : .still
    }

    /// Seconds from one pass to the next in `mode`.
    /// `settled`: tracked faces the last pass found settled (see above);
    /// `followedOnly`: and only an event follows them (idle rate).
    public func interval(_ mode: Mode, settled: Bool = false, followedOnly: Bool = false) -> Double {
        guard mode == .active else { return 1 / idleRate }
        let rate = max(maxRate, idleRate)
        guard settled else { return 1 / rate }
        return 1 / (followedOnly ? idleRate : max(idleRate, min(rate, settledRate)))
    }
}
