import Foundation
import SightlinePipeline

/// Where a JPEG viewer (`/ws` JPEG, `/stream.mjpg`) is in its camera's
/// frames: the size it takes (counted in the camera's `JPEGViewers`, so the
/// pipeline makes it, until it ends), the last frame it was sent, and the
/// frames it could no longer get, counted as skipped.
///
/// Service thread only (a viewer's).
struct JPEGCursor {
    let camera: CameraFeed
    /// The size it takes (nil: not counted, or no more).
    private(set) var size: JPEGSize?
    /// Index of the last frame this viewer was sent (see EncodedFrame.index).
    private(set) var lastFrameIndex: UInt64 = 0
    /// Every frame up to this index was either sent to this viewer or counted as skipped for it.
    private var accountedThrough: UInt64 = 0

    init(camera: CameraFeed) {
        self.camera = camera
        accountedThrough = camera.frames.latest.map { $0.index - 1 } ?? 0
    }

    /// The stream starts: its size is counted (the pipeline makes that JPEG
    /// from the next frame on). A newest frame made at no size it takes is
    /// not due to it, nor a skip.
    mutating func start(_ size: JPEGSize) {
        self.size = size
        camera.frames.viewers.change(size, by: 1)
        if let latest = camera.frames.latest, latest.send(size) == nil { accountedThrough = latest.index }
    }

    /// The stream ended.
    mutating func end() {
        guard let size else { return }
        self.size = nil
        camera.frames.viewers.change(size, by: -1)
    }

    /// A new frame is out: frames the viewer can no longer get (every one
    /// older than the newest that it was not sent) count as skipped now, so a
    /// stalled viewer's losses show even while it gets no callbacks. Whether a
    /// frame it has not had is there.
    mutating func account() -> Bool {
        guard let latest = camera.frames.latest else { return false }
        if latest.index > accountedThrough + 1 {
            camera.stats.clientSkipped(latest.index - 1 - accountedThrough)
            accountedThrough = latest.index - 1
        }
        return lastFrameIndex < latest.index
    }

    /// The newest frame and its JSON and JPEG at the viewer's size, if it has
    /// not had it; a frame published without that size (made before the
    /// viewer came) is not due: the next one is.
    func due() -> (frame: EncodedFrame, pair: (json: Data, jpeg: Data))? {
        guard let frame = camera.frames.latest, frame.index > lastFrameIndex,
              let pair = frame.send(size ?? .stream) else { return nil }
        return (frame, pair)
    }

    mutating func markSent(_ frame: EncodedFrame) {
        lastFrameIndex = frame.index
        accountedThrough = max(accountedThrough, frame.index)
    }
}
