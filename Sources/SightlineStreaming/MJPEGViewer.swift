import Foundation
import SightlineHTTP
import SightlinePipeline
import SightlineSupport

/// A `/stream.mjpg` viewer: the newest frame as one multipart part
/// (`MJPEG.partHead`), if it has not had it, whenever its socket can take
/// one; frames it could not take count as skipped.
///
/// Service thread only (the server's `StreamSession` of the endless answer).
final class MJPEGViewer: StreamSession {
    private var presence: CameraPresence
    private var cursor: JPEGCursor
    private var camera: CameraFeed { presence.camera }

    /// `removed`: the camera its path named was removed since its route answered (`camera` is then the first).
    init(_ socket: StreamSocket, camera: CameraFeed, size: JPEGSize, streams: CameraStreams, removed: Bool) {
        presence = CameraPresence(camera: camera, feeds: streams.feeds)
        if removed { presence.markRemoved() }
        cursor = JPEGCursor(camera: camera)
        camera.stats.clients(.mjpeg, change: 1)
        cursor.start(size)
    }

    func woken(_ socket: StreamSocket) {
        guard presence.stillStreamed() else { return socket.askWriteable() }
        if cursor.account() { socket.askWriteable() }
    }

    func writeable(_ socket: StreamSocket) -> Bool {
        if presence.removed { return false }
        guard let (frame, pair) = cursor.due(), !socket.isChoked else { return true }
        cursor.markSent(frame)
        var part = Data(MJPEG.partHead(length: pair.jpeg.count, seq: frame.seq, capturedAt: frame.capturedAt).utf8)
        part.append(pair.jpeg)
        part.append(contentsOf: [13, 10])
        guard socket.write(part, as: .binary) else { return false }
        camera.stats.frameSent(seq: frame.seq, bytes: part.count,
                               latencySeconds: Double(MonotonicClock.nanos() &- frame.capturedNanos) / 1e9)
        return true
    }

    func closed() {
        camera.stats.clients(.mjpeg, change: -1)
        cursor.end()
    }
}
