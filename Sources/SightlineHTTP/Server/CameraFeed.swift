import Foundation
import SightlinePipeline

/// One camera as the stream server sends it: the slot its pipeline leaves
/// each frame in, its stats (viewers, frames sent, skips) and its H.264 feed.
/// The first of the server's feeds serves `/ws`, `/stream.mjpg`; every feed
/// serves `/cam/NAME/ws` and `/cam/NAME/stream.mjpg`.
///
/// `Sendable`: each part guards its own state.
public struct CameraFeed: Sendable {
    public let name: String
    public let frames: LatestFrameSlot
    public let stats: PipelineStats
    /// The H.264 sink's access units and the figures about them (nil: H.264 is off).
    public let video: VideoFeed?
    public let videoStats: VideoStats?

    public init(name: String, frames: LatestFrameSlot, stats: PipelineStats, video: VideoFeed? = nil,
                videoStats: VideoStats? = nil) {
        self.name = name
        self.frames = frames
        self.stats = stats
        self.video = video
        self.videoStats = videoStats
    }
}

/// The server's cameras by the paths that stream them.
struct CameraFeeds: Sendable {
    let all: [CameraFeed]

    /// The first camera's: the unprefixed routes'.
    var first: CameraFeed { all[0] }

    /// The camera `path` streams, and the path within it: `/ws` is the
    /// first's `/ws`, `/cam/NAME/ws` camera NAME's; nil for `/cam/` of a
    /// camera that does not exist.
    func feed(forPath path: String) -> (feed: CameraFeed, path: String)? {
        guard path.hasPrefix("/cam/") else { return (first, path) }
        let rest = path.dropFirst("/cam/".count)
        let name = rest.prefix { $0 != "/" }
        guard let feed = all.first(where: { $0.name == name }) else { return nil }
        return (feed, String(rest.dropFirst(name.count)))
    }
}
