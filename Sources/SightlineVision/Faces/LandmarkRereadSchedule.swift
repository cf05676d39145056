import Foundation

/// Live pacing of the second landmark pass (`YuNetDetector.Options.refineEverySeconds`):
/// which of a pass's faces are read upright again and which carry their last
/// reading. It keeps each face's last reading (matched to the next pass's
/// faces by overlap) from one pass to the next.
///
/// A pass starts with `beginPass`, records what it read or carried, and ends
/// with `endPass`, whose readings the next pass goes by. Belongs to its
/// detector's thread.
struct LandmarkRereadSchedule {
    /// One face's last landmark reading.
    struct Reading {
        var box: PixelRect<Double>
        /// When it was read (monotonic seconds).
        var at: Double
        /// The tracked roll then (nil for a face new to the tracker), the
        /// roll read, and the reading before it (nil when it was the first).
        var tracked: Double?
        var reading: Double?
        var previousReading: Double?
        /// The wait that ended with this reading.
        var waited: Double = 0

        /// This reading carried on to the face's box in a pass that did not read it again.
        func carried(to box: PixelRect<Double>) -> Reading {
            var carried = self
            carried.box = box
            return carried
        }
    }

    /// What a pass does with one face.
    enum Decision {
        /// Read less than its interval ago: it carries that reading (already recorded).
        case notDue
        /// New to the tracker past `newFacesReadAtOnce`: boxed now, read on the next pass.
        case newFaceWaits
        /// To be read (unless a crowd's budget is spent): its last reading,
        /// and the interval that has passed since (nil: no tracked roll or no reading).
        case due(last: Reading?, interval: Double?)
    }

    /// `refineEverySeconds`: 0 reads every face fully on every pass (no pacing).
    var everySeconds: Double
    var steadyFactor: Double
    var steadyRollDegrees: Double
    /// How many faces new to the tracker a pass reads at once (nil: all).
    var newFacesReadAtOnce: Int?

    /// The last pass's faces with their last readings.
    private(set) var readings: [Reading] = []
    /// This pass's so far, and how many new faces it read.
    private var pending: [Reading] = []
    private(set) var newFacesRead = 0

    init(everySeconds: Double, steadyFactor: Double, steadyRollDegrees: Double, newFacesReadAtOnce: Int?) {
        self.everySeconds = everySeconds
        self.steadyFactor = steadyFactor
        self.steadyRollDegrees = steadyRollDegrees
        self.newFacesReadAtOnce = newFacesReadAtOnce
    }

    init(_ options: YuNetDetector.Options) {
        self.init(everySeconds: options.refineEverySeconds, steadyFactor: options.steadyRefineFactor,
                  steadyRollDegrees: options.steadyRollDegrees, newFacesReadAtOnce: options.newFacesReadAtOnce)
    }

    /// Whether faces are paced (live) rather than read fully on every pass (still photos).
    var isPaced: Bool { everySeconds > 0 }

    mutating func beginPass() {
        pending = []
        newFacesRead = 0
    }

    /// The readings this pass recorded become the ones the next goes by.
    mutating func endPass() {
        readings = pending
    }

    /// The last reading of the face at `box`, if a face of the last pass overlaps it.
    func last(_ box: PixelRect<Double>) -> Reading? {
        FaceGeometry.sameFace(box, in: readings, box: { $0.box })
    }

    /// When the face at `box` was last read by a crop: -inf never.
    func lastReadAt(_ box: PixelRect<Double>) -> Double {
        last(box)?.at ?? -.infinity
    }

    /// What to do with the face at `box` at `now` (paced passes): `tracked`
    /// is its tracked roll (nil: no track with a roll), `isNew` whether no
    /// tracked face overlaps it. A face not due carries its reading.
    mutating func decide(_ box: PixelRect<Double>, tracked: Double?, isNew: Bool,
                         now: Double) -> Decision {
        let last = self.last(box)
        let wait = tracked.flatMap { tracked in last.map { interval($0, tracked: tracked) } }
        if let wait, let last, !PassPace.isDue(lastAt: last.at, now: now, every: wait) {
            pending.append(last.carried(to: box))
            return .notDue
        }
        if isNew, let atOnce = newFacesReadAtOnce, newFacesRead >= atOnce { return .newFaceWaits }
        return .due(last: last, interval: wait)
    }

    /// A face about to be read; a new one counts towards `newFacesReadAtOnce`.
    mutating func reading(isNew: Bool) {
        if isNew { newFacesRead += 1 }
    }

    /// A reading this pass made.
    mutating func record(_ reading: Reading) {
        pending.append(reading)
    }

    /// A face this pass did not read carries `last` (if any) on to `box`.
    mutating func carry(_ last: Reading?, to box: PixelRect<Double>) {
        if let last { pending.append(last.carried(to: box)) }
    }

    /// How long a tracked face's landmarks stand: `everySeconds`, or
    /// `steadyFactor` times that for a face seen to hold still. Steady
    /// takes evidence from the readings, not only from the tracker (whose
    /// roll rate is near 0 at a turning head's extreme, and unknown for a new
    /// track): the tracked roll has not moved since the last reading by
    /// `steadyRollDegrees`, and the last two readings, and the track at the
    /// last one, agree within `readingScatter` times that (more for a face
    /// narrower than `steadyReferenceWidth`, whose readings scatter more).
    /// The wait grows `steadyGrowth` times with each steady reading (0.1,
    /// 0.4, 1.6, 2 s), so a head that has only just stopped turning, or
    /// is at the end of a turn and about to come back, is read again soon
    /// and its track's rate, which trails such a change, is not carried far.
    func interval(_ last: Reading, tracked: Double) -> Double {
        // Readings of a small face scatter more (its eyes are a few pixels
        // apart), so its tolerance grows as its box shrinks.
        let limit = steadyRollDegrees * max(1, Self.steadyReferenceWidth / max(1, last.box.w))
        func near(_ a: Double?, _ b: Double?, within degrees: Double) -> Bool {
            guard let a, let b else { return false }
            return abs(FaceGeometry.normalizedDegrees(a - b)) < degrees
        }
        // Two readings of a still head scatter by up to about twice the
        // limit (crops of 80-130 px faces on a pan: 1-3 degrees apart); the
        // track, which optical flow turns with the picture, moves by much
        // less unless the head turns. A face's first reading (no reading
        // before it; for a face new to the tracker, no track either) counts
        // as steady when the track, which started from or agreed with it,
        // has not turned since.
        let scatter = Self.readingScatter * limit
        let steady = (last.previousReading == nil || near(last.reading, last.previousReading, within: scatter))
            && (last.tracked == nil || near(last.reading, last.tracked, within: scatter))
            && near(tracked, last.tracked ?? last.reading, within: limit)
        guard steady else { return everySeconds }
        return min(everySeconds * steadyFactor, max(everySeconds, Self.steadyGrowth * last.waited))
    }

    /// How far apart two readings of a still head may be, in `steadyRollDegrees`.
    static let readingScatter = 2.0
    /// How much longer a steady face waits with each steady reading.
    static let steadyGrowth = 4.0

    /// Faces at least this wide (pixels) are held to `steadyRollDegrees`;
    /// narrower ones to that times this over their width.
    static let steadyReferenceWidth = LandmarkRefiner.steadyReferenceWidth
}
