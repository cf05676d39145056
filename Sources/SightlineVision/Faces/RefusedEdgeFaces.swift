import Foundation

/// Live: faces new to the tracker that the person check refused a moment ago
/// while the frame's edge cut them (`YuNetDetector.Options.refusedEdgeFaceSeconds`).
/// On a pan, faces come into view across the edge, and the check refuses
/// most of them until they are wholly in (on the pan past 20 faces of
/// `scripts/make-face-crowd.py --faces people`, 49 of the 50 faces it refused
/// in 30 s were cut by the edge; it took 31 cut faces and 29 whole ones).
/// Each pass found them again and checked them again (about 3 ms each):
/// 1.7 refusals a second. Such a face, still at the edge, is left out of
/// the passes for `seconds` after its refusal, then checked again; once
/// wholly in view it is checked at once. A face the check refused inside the
/// frame (an animal's, or a person's it misread) is checked on every pass as
/// before: skipping those for a second lost a face on the live video.
///
/// Belongs to its detector's thread.
struct RefusedEdgeFaces {
    /// How long a refusal at the edge stands (0: never remembered).
    var seconds: Double
    /// A face is at the edge when its box comes nearer to it than this share
    /// of the face's width (or crosses it).
    static let edgeMargin = 0.05

    private var refusals: [(box: PixelRect<Double>, at: Double)] = []

    init(seconds: Double) {
        self.seconds = seconds
    }

    /// Whether `box` is cut by (or touches) the edge of a `width` x `height` frame.
    static func atEdge(_ box: PixelRect<Double>, width: Int, height: Int) -> Bool {
        !box.isInside(width: width, height: height, inset: edgeMargin)
    }

    /// The person check refused the face at `box` at `now`: remembered when at the edge.
    mutating func refused(_ box: PixelRect<Double>, width: Int, height: Int, at now: Double) {
        guard seconds > 0, Self.atEdge(box, width: width, height: height) else { return }
        refusals.append((box, now))
    }

    /// Whether the new face at `box` is one refused at the edge less than
    /// `seconds` ago and still at the edge; its memory then moves with it.
    mutating func skips(_ box: PixelRect<Double>, width: Int, height: Int, at now: Double) -> Bool {
        refusals.removeAll { now - $0.at >= seconds }
        guard Self.atEdge(box, width: width, height: height),
              let index = FaceGeometry.sameFace(box, in: Array(refusals.indices), box: { refusals[$0].box })
        else { return false }
        refusals[index].box = box
        return true
    }
}
