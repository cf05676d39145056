import Foundation
import SightlineSupport

/// A cheap test of how the picture changed: the gray frame is shrunk to
/// 32x24 cells (area averaging, about 0.1 ms for 640x480) and compared
/// - with a reference frame (the last one given to the face detector): the
///   picture has changed when at least `minCells` cells differ by more than
///   `cellThreshold` gray levels. Averaging a few hundred pixels per cell
///   removes sensor noise; a person walking in changes whole cells by tens
///   of levels;
/// - with the frame read just before: a cut (another photo, a source or
///   camera switch, a whip pan) when at least `cutFraction` of the cells
///   differ by more than `cutCellThreshold` levels. A turning, zooming or
///   drifting picture changes a few cells from one frame to the next; a
///   cut changes most of them.
///
/// Thread ownership: the pipeline thread (FaceStage). Not Sendable.
package final class SceneChangeProbe {
    static let width = 32, height = 24
    var cellThreshold = 12
    var minCells = 2
    var cutCellThreshold = 24
    var cutFraction = 0.5
    /// The frame read last, and the one before it (nil until read).
    private var current: ImageBuffer?
    private var previous: ImageBuffer?
    private var reference: ImageBuffer?

    package init() {}

    /// Reads a frame (once per frame): whether it differs from the
    /// reference (true when there is none yet), and whether it is a cut
    /// from the frame read before it (false for the first).
    package func read(_ gray: ImageBuffer) throws -> (changed: Bool, cut: Bool) {
        let thumbnail = previous ?? ImageBuffer(width: Self.width, height: Self.height, channels: 1)
        previous = current
        current = thumbnail
        try ImageOps.resize(gray.cView, into: thumbnail.cView, interpolation: .area)
        let changed = reference.map { Self.differing(thumbnail, $0, by: cellThreshold, atLeast: minCells) } ?? true
        let cells = Self.width * Self.height
        let cut = previous.map {
            Self.differing(thumbnail, $0, by: cutCellThreshold, atLeast: Int((cutFraction * Double(cells)).rounded(.up)))
        } ?? false
        return (changed, cut)
    }

    /// The frame last read becomes the reference.
    package func keepAsReference() {
        guard let current else { return }
        if reference == nil {
            reference = ImageBuffer(width: Self.width, height: Self.height, channels: 1)
        }
        reference!.bytes.update(from: current.bytes, count: current.stride * Self.height)
    }

    /// Whether at least `count` cells of `a` and `b` differ by more than `levels`.
    private static func differing(_ a: ImageBuffer, _ b: ImageBuffer, by levels: Int, atLeast count: Int) -> Bool {
        var differing = 0
        for row in 0..<height {
            let x = a.bytes + row * a.stride, y = b.bytes + row * b.stride
            for column in 0..<width where abs(Int(x[column]) - Int(y[column])) > levels {
                differing += 1
                if differing >= count { return true }
            }
        }
        return false
    }
}
