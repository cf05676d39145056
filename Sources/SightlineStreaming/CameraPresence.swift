/// Whether a viewer's camera is still streamed: one removed at runtime
/// (`CameraStreams.remove`) ends its viewers' streams.
///
/// Service thread only (a viewer's).
struct CameraPresence {
    let camera: CameraFeed
    private let feeds: CameraFeeds
    /// Found removed; it stays so.
    private(set) var removed = false

    init(camera: CameraFeed, feeds: CameraFeeds) {
        self.camera = camera
        self.feeds = feeds
        removed = !feeds.contains(camera)
    }

    /// Its stream ends at the next look: the camera it asked for was removed before it started.
    mutating func markRemoved() {
        removed = true
    }

    /// Looks again (each wake-up); false once the camera is gone.
    mutating func stillStreamed() -> Bool {
        if !removed && !feeds.contains(camera) { removed = true }
        return !removed
    }
}
