import Foundation

/// The tilt each fine pass on a picture looks for (`YuNetDetector.Options.fineTurns`):
/// the frame is turned back by it, so a head tilted further than the model
/// finds upright (about 30°) is found by one of the passes.
///
/// Each round of `turns` starts with the tilt nearest twice the median roll
/// of the faces already tracked (those read upright; their first-pass rolls
/// when none is), then the next nearest: the first pass on a turned picture
/// (a tilted camera, a crowd leaning one way) finds its large faces, and the
/// small ones, tilted like them, are looked for first. With no face tracked
/// the order is `turns`' own. The order holds through a round.
struct FineTurnSchedule {
    let turns: [Double]
    /// This round's order of `turns`.
    private var order: [Double] = []

    init(turns: [Double]) {
        self.turns = turns
    }

    /// The tilt the `fine`-th fine pass on a picture looks for (0 without turns).
    mutating func tilt(forPass fine: Int, hints: [FaceObservation]) -> Double {
        guard !turns.isEmpty else { return 0 }
        let count = turns.count
        if fine % count == 0 || order.count != count {
            // Rolls read upright first: a first-pass roll reads a tilted face short.
            let read = hints.compactMap(\.roll)
            let rolls = (read.isEmpty ? hints.compactMap { FaceGeometry.withPose($0).roll } : read).sorted()
            // The faces still to find lean further than those found: the
            // usual (upright) passes find the nearer-upright ones first. So
            // the round starts with the tilt nearest twice their median (a
            // group read at 12° is looked for at +30° first, one at 4° upright).
            let dominant = 2 * (rolls.isEmpty ? 0 : rolls[rolls.count / 2])
            order = turns.enumerated().sorted {
                let a = abs(FaceGeometry.normalizedDegrees($0.element - dominant))
                let b = abs(FaceGeometry.normalizedDegrees($1.element - dominant))
                return a != b ? a < b : $0.offset < $1.offset
            }.map(\.element)
        }
        return order[fine % count]
    }
}
