import Foundation
import SightlinePipeline

/// One camera as its viewers are sent it: the slot its pipeline leaves
/// each frame in, its stats (viewers, frames sent, skips) and its H.264 feed.
/// The first of `CameraStreams`' feeds serves `/ws`, `/stream.mjpg`; every feed
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
