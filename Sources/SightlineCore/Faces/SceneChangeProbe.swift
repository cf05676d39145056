import Foundation

/// A cheap test of whether the picture changed since a reference frame: the
/// gray frame is shrunk to 32x24 cells (area averaging, about 0.1 ms for
/// 640x480), and the picture has changed when at least `minCells` cells
/// differ from the reference by more than `cellThreshold` gray levels.
/// Averaging a few hundred pixels per cell removes sensor noise; a person
/// walking in changes whole cells by tens of levels.
///
/// Thread ownership: the pipeline thread (FaceStage). Not Sendable.
final class SceneChangeProbe {
    static let width = 32, height = 24
    var cellThreshold = 12
    var minCells = 2
    private let current = ImageBuffer(width: SceneChangeProbe.width, height: SceneChangeProbe.height, channels: 1)
    private var reference: ImageBuffer?

    /// Whether `gray` differs from the reference; true when there is none yet.
    func changed(_ gray: ImageBuffer) throws -> Bool {
        try ImageOps.resize(gray.cView, into: current.cView, interpolation: .area)
        guard let reference else { return true }
        var differing = 0
        for row in 0..<Self.height {
            let a = current.bytes + row * current.stride, b = reference.bytes + row * reference.stride
            for column in 0..<Self.width where abs(Int(a[column]) - Int(b[column])) > cellThreshold {
                differing += 1
                if differing >= minCells { return true }
            }
        }
        return false
    }

    /// The frame last given to `changed` becomes the reference.
    func keepAsReference() {
        if reference == nil {
            reference = ImageBuffer(width: Self.width, height: Self.height, channels: 1)
        }
        reference!.bytes.update(from: current.bytes, count: current.stride * Self.height)
    }
}
