import SightlineVision

/// Where a camera's face passes spent their time since the start, part by
/// part, in seconds (`/api/state` `faces.passSeconds`, `/metrics`
/// `sightline_face_pass_seconds_total{part}`): a rate of each over a window
/// is about the cores that part costs. They are monotonic-clock seconds, so
/// on a busy machine they count time the thread waited for a core too (the
/// face thread runs 5 nice levels down): at 1080p with 10 viewers they summed
/// to 0.117 where the thread's own CPU time was 0.099. Every part but
/// `recognition` runs on the face thread; `recognition` runs on the
/// pipeline thread when a pass's result is taken.
public struct FacePassSeconds: Sendable, Equatable {
    /// Reading the pass's picture at the size it reads (the face thread's scaling of a decoded frame).
    public var read = 0.0
    /// Frame-wide passes: the usual, fine and turned ones (letterbox, forward pass, decoding).
    public var detect = 0.0
    /// Crops of single faces: confirming missed tracks and landmark re-reads.
    public var crops = 0.0
    /// The person check of new faces.
    public var personCheck = 0.0
    /// Smile and eyes readings.
    public var attributes = 0.0
    /// The rest of the face thread's passes (bookkeeping between the parts).
    public var other = 0.0
    /// Recognition and enrollment of the passes' faces (`FaceService`), on the pipeline thread.
    public var recognition = 0.0
    /// Passes counted, and what they read: confirming crops, landmark
    /// re-reads, person checks, smile and eyes readings, the network's
    /// forward passes on single-face crops, and faces the check refused.
    public var passes: UInt64 = 0
    public var confirmations: UInt64 = 0
    public var rereads: UInt64 = 0
    public var personChecks: UInt64 = 0
    public var attributeReads: UInt64 = 0
    public var cropForwards: UInt64 = 0
    public var refused: UInt64 = 0

    public init() {}

    /// Adds a pass: its profile, its whole time on the face thread, and its recognition's.
    public mutating func add(_ profile: FacePassProfile, seconds: Double, recognitionSeconds: Double) {
        read += profile.readSeconds
        detect += profile.detectSeconds
        crops += profile.cropSeconds
        personCheck += profile.personCheckSeconds
        attributes += profile.attributeSeconds
        other += max(0, seconds - profile.seconds)
        recognition += recognitionSeconds
        passes += 1
        confirmations += UInt64(profile.confirmations)
        rereads += UInt64(profile.rereads)
        personChecks += UInt64(profile.personChecks)
        attributeReads += UInt64(profile.attributeReads)
        cropForwards += UInt64(profile.cropForwards)
        refused += UInt64(profile.refused)
    }

    /// The counts by name (`/api/state` `faces.passCounts`).
    public var counts: [(name: String, count: UInt64)] {
        [("passes", passes), ("confirmations", confirmations), ("rereads", rereads),
         ("personChecks", personChecks), ("attributeReads", attributeReads), ("cropForwards", cropForwards),
         ("refused", refused)]
    }

    /// The parts by name, as `/api/state` and `/metrics` give them.
    public var parts: [(name: String, seconds: Double)] {
        [("read", read), ("detect", detect), ("crops", crops), ("personCheck", personCheck),
         ("attributes", attributes), ("other", other), ("recognition", recognition)]
    }
}
