import Foundation
import Logging
import SightlineHTTP
import SightlinePipeline

/// What the server streams of its cameras (its `StreamProvider`): `/ws`
/// viewers (each frame's JSON, then its JPEG at the size the viewer takes,
/// `WebSocketJPEGViewer`; or with `?video=h264`/`fmp4` the camera's H.264,
/// `WebSocketVideoViewer`) and `/stream.mjpg` viewers (`MJPEGViewer`), each
/// from the camera it asked for (`CameraFeed`: `/ws` the first,
/// `/cam/NAME/ws` camera NAME). Each camera's pipeline leaves frames in its
/// slot and wakes the server, which tells every viewer; a viewer that
/// cannot keep up is sent the newest frame when its socket drains, and the
/// frames it missed count as skipped. A camera removed at runtime ends its
/// viewers' streams (a WebSocket with 1001) at the next wake-up.
///
/// `Sendable`: the cameras are in a `Mutex` (`CameraFeeds`), the rest is
/// immutable; the viewers it makes are the server's service thread's.
public final class CameraStreams: StreamProvider {
    public struct Options: Sendable {
        /// H.264 viewers: moved ahead to a keyframe past this lag; whether the low rendition exists.
        public var videoMaxLagSeconds = 0.5
        public var videoLowAvailable = true
        /// Bytes not yet sent that an H.264 viewer's socket may hold (TCP_NOTSENT_LOWAT):
        /// beyond it the socket is not writeable, so a slow link's backlog stays
        /// here, where the viewer can be moved ahead, not in the kernel.
        public var videoSocketBacklogBytes: Int32 = 32 << 10
        public init() {}
    }

    let feeds: CameraFeeds
    let options: Options
    let logger: Logger

    /// `cameras`: at least one; the first streams on `/ws` and `/stream.mjpg`, each on `/cam/NAME/`.
    public init(cameras: [CameraFeed], options: Options = Options(), logger: Logger) {
        precondition(!cameras.isEmpty, "streams need a camera")
        feeds = CameraFeeds(all: cameras)
        self.options = options
        self.logger = logger
    }

    /// Any thread: streams `feed` on `/cam/NAME/` from now on; false when a
    /// camera of that name (ignoring case) is streamed.
    @discardableResult
    public func add(_ feed: CameraFeed) -> Bool {
        feeds.add(feed)
    }

    /// Any thread: `/cam/NAME/` streams nothing from now on; its viewers are
    /// closed at the server's next wake-up (the caller wakes it). The first
    /// camera stays: false for it, and for a name not streamed.
    @discardableResult
    public func remove(named name: String) -> Bool {
        feeds.remove(named: name) != nil
    }

    // MARK: - StreamProvider

    public func acceptsWebSocket(path: String) -> Bool {
        feeds.feed(forPath: path)?.path == "/ws"
    }

    public func webSocket(for request: HTTPRequest) -> Result<StreamOpener, StreamRefusal> {
        guard let found = feeds.feed(forPath: request.path), found.path == "/ws" else {
            return .failure(StreamRefusal(.error(404, "no such camera", detail: "\(request.path) streams no camera; see /api/cameras")))
        }
        let camera = found.feed
        let format: StreamFormat
        switch StreamFormat.parse(request.query, h264Available: camera.video != nil, lowAvailable: options.videoLowAvailable) {
        case .failure(let refused): return .failure(StreamRefusal(refused.response))
        case .success(let parsed): format = parsed
        }
        let size = JPEGSize(query: request.query)
        return .success { [self] socket in
            if let wanted = format.video, let video = camera.video {
                return WebSocketVideoViewer(socket, camera: camera, feed: video, pinned: wanted.pinned, fmp4: wanted.fmp4, streams: self)
            }
            return WebSocketJPEGViewer(socket, camera: camera, size: size, streams: self)
        }
    }

    /// `what`: the `JPEGSize` of an MJPEG stream (`/stream.mjpg`, `/cam/NAME/stream.mjpg`).
    public func bodyStream(_ what: any Sendable, path: String) -> StreamOpener {
        let size = what as? JPEGSize ?? .stream
        // nil: a camera removed since its route answered; the stream ends at once.
        let found = feeds.feed(forPath: path)?.feed
        return { [self] socket in
            MJPEGViewer(socket, camera: found ?? feeds.first, size: size, streams: self, removed: found == nil)
        }
    }
}
