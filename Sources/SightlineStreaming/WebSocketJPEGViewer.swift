import Foundation
import SightlineHTTP
import SightlinePipeline
import SightlineSupport

/// A `/ws` viewer on JPEG: each frame's JSON, then on the next writeable
/// callback the JPEG of the same frame, both of the size the viewer takes
/// (`?full=1`: the full picture).
///
/// Service thread only (the server's `StreamSession`).
final class WebSocketJPEGViewer: StreamSession {
    private var presence: CameraPresence
    private var cursor: JPEGCursor
    /// The frame whose JSON went out and whose JPEG is due next.
    private var pendingBinary: EncodedFrame?
    private var camera: CameraFeed { presence.camera }

    init(_ socket: StreamSocket, camera: CameraFeed, size: JPEGSize, streams: CameraStreams) {
        presence = CameraPresence(camera: camera, feeds: streams.feeds)
        cursor = JPEGCursor(camera: camera)
        camera.stats.clients(.webSocket, change: 1)
        // Removed between the upgrade's check and now: it ends at once.
        if presence.removed {
            socket.askWriteable()
            return
        }
        cursor.start(size)
        if camera.frames.latest?.send(size) != nil { socket.askWriteable() }
    }

    func woken(_ socket: StreamSocket) {
        guard presence.stillStreamed() else { return socket.askWriteable() }
        if cursor.account() || pendingBinary != nil { socket.askWriteable() }
    }

    func writeable(_ socket: StreamSocket) -> Bool {
        if presence.removed {
            socket.setCloseReason(.goingAway, "this camera was removed")
            return false
        }
        let stats = camera.stats
        if let frame = pendingBinary {
            guard let pair = frame.send(cursor.size ?? .stream) else { return false }  // its JSON went out: never without its JPEG
            let start = MonotonicClock.nanos()
            guard socket.write(pair.jpeg, as: .binary) else { return false }
            let now = MonotonicClock.nanos()
            stats.stage(.send, seconds: Double(now - start) / 1e9)
            stats.frameSent(seq: frame.seq, bytes: pair.json.count + pair.jpeg.count,
                            latencySeconds: Double(now &- frame.capturedNanos) / 1e9)
            pendingBinary = nil
            if let latest = camera.frames.latest, latest.index > cursor.lastFrameIndex { socket.askWriteable() }
            return true
        }
        guard let (frame, pair) = cursor.due() else { return true }
        cursor.markSent(frame)
        guard socket.write(pair.json, as: .text) else { return false }
        pendingBinary = frame
        socket.askWriteable()
        return true
    }

    func closed() {
        camera.stats.clients(.webSocket, change: -1)
        cursor.end()
    }
}
