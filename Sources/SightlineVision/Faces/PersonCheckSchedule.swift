import Foundation

/// Which of a pass's faces the person check (`PersonFaceCheck`) looks at.
/// Faces already tracked passed when they were new and are kept unchecked;
/// of the faces new to the tracker, at most `perPass` are checked, the
/// largest first, and the others are left out of this pass, to be found and
/// checked by a later one (`YuNetDetector.Options.personChecksPerPass`).
struct PersonCheckSchedule {
    enum Verdict: Equatable {
        /// Tracked already: kept without a check.
        case tracked
        /// New, within the pass's budget: kept if the check takes it for a person's.
        case check
        /// New, past the budget: left out of this pass.
        case leftOut
    }

    /// New faces checked in one pass at most (nil: all).
    var perPass: Int?

    /// The verdict for each of `faces`, given the tracked faces (`hints`).
    func plan(_ faces: [FaceObservation], hints: [FaceObservation]) -> [Verdict] {
        let isNew = faces.map { FaceGeometry.sameFace($0.box, in: hints, box: { $0.box }) == nil }
        let checked = Set(faces.indices.filter { isNew[$0] }.sorted { faces[$0].box.w > faces[$1].box.w }
            .prefix(perPass ?? Int.max))
        return faces.indices.map { !isNew[$0] ? .tracked : checked.contains($0) ? .check : .leftOut }
    }
}
