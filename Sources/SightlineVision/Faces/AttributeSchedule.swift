import Foundation

/// Live pacing of the smile and eyes readings
/// (`YuNetDetector.Options.attributesEverySeconds`, `attributesPerPass`): a
/// face read less than `everySeconds` ago (matched to the last pass's faces
/// by overlap) carries its last reading; of the faces due, a pass reads the
/// never-read first, then the largest, up to its budget, and the rest carry
/// their last reading (none yet: none) to a later pass. Eyes are shown
/// through `SteadyEyes`, so one stray reading does not flip them.
///
/// Keeps each face's last reading from one pass to the next; belongs to its
/// detector's thread.
struct AttributeSchedule {
    /// A face's last smile and eyes reading. `eyes` holds the shown state
    /// and a reading waiting for a second (SteadyEyes).
    struct Reading {
        var box: PixelRect<Double>
        var at: Double
        var smile: Double?
        var eyes: SteadyEyes
        /// The eyes as last read (`eyes` holds what is shown).
        var eyesRead: Bool?
        /// The wait for the next reading, in `everySeconds`.
        var waitFactor = 1.0

        /// This reading carried on to the face's box in a pass that did not read it again.
        func carried(to box: PixelRect<Double>) -> Reading {
            var carried = self
            carried.box = box
            return carried
        }
    }

    /// 0 reads every face on every pass.
    var everySeconds: Double
    /// The longest wait of a face whose readings agree, in `everySeconds`.
    var steadyFactor: Double
    /// Smiles that differ by more than this do not agree.
    static let smileAgreement = 0.1

    /// The last pass's faces with their last readings.
    private(set) var readings: [Reading] = []

    init(everySeconds: Double, steadyFactor: Double = 1) {
        self.everySeconds = everySeconds
        self.steadyFactor = max(1, steadyFactor)
    }

    /// Whether a reading (`smile`, `eyes`) says what `last` said.
    static func agrees(smile: Double?, eyes: Bool?, with last: Reading) -> Bool {
        guard eyes == last.eyesRead else { return false }
        switch (smile, last.smile) {
        case (nil, nil): return true
        case let (now?, before?): return abs(now - before) <= smileAgreement && (now >= 0.5) == (before >= 0.5)
        default: return false
        }
    }

    /// Which of `faces` a pass at `now` reads, with at most `budget` read:
    /// indices into `faces`, never-read first, then the largest.
    func due(_ faces: [FaceObservation], at now: Double, budget: Int) -> Set<Int> {
        let lasts = faces.map(last)
        let due = faces.indices.filter { index in
            guard let last = lasts[index] else { return true }
            return PassPace.isDue(lastAt: last.at, now: now, every: everySeconds * last.waitFactor)
        }
        return Set(due.sorted { a, b in
            (lasts[a] == nil) != (lasts[b] == nil) ? lasts[a] == nil : faces[a].box.w > faces[b].box.w
        }.prefix(budget))
    }

    /// The pass at `now`: the faces due (see `due`) are read by `read`, the
    /// others carry their last reading; their readings are kept for the next
    /// pass. Without pacing every face is read and nothing is kept.
    mutating func pass(_ faces: [FaceObservation], at now: Double, budget: Int,
                       read: (FaceObservation) throws -> FaceObservation) rethrows -> [FaceObservation] {
        guard everySeconds > 0 else { return try faces.map(read) }
        let lasts = faces.map(last)
        let reading = due(faces, at: now, budget: budget)
        var faces = faces
        var kept: [Reading] = []
        for index in faces.indices {
            if reading.contains(index) {
                faces[index] = try read(faces[index])
                let smile = faces[index].smile, eyesRead = faces[index].eyesClosed
                var eyes = lasts[index]?.eyes ?? SteadyEyes()
                faces[index].eyesClosed = eyes.add(eyesRead)
                let waitFactor = lasts[index].map {
                    Self.agrees(smile: smile, eyes: eyesRead, with: $0) ? min(steadyFactor, 2 * $0.waitFactor) : 1
                } ?? 1
                kept.append(Reading(box: faces[index].box, at: now, smile: smile, eyes: eyes, eyesRead: eyesRead,
                                    waitFactor: waitFactor))
            } else if let last = lasts[index] {
                faces[index].smile = last.smile
                faces[index].eyesClosed = last.eyes.shown
                kept.append(last.carried(to: faces[index].box))
            }
        }
        readings = kept
        return faces
    }

    private func last(_ face: FaceObservation) -> Reading? {
        FaceGeometry.sameFace(face.box, in: readings, box: { $0.box })
    }
}
