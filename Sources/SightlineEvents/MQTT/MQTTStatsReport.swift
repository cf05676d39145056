import Foundation
import Synchronization
import SightlineVision
import SightlineSupport
import SightlinePipeline

/// One camera's figures in the `<prefix>/stats` message: frame rates
/// (capture, processed, sent), drops by reason, the face detector's rate,
/// clients and events; `payload` makes the message of the server's one
/// connection every `statsSeconds` on the publisher's thread.
///
/// The message keeps the one-camera shape of before at its top level
/// (`camera`, `time`, `fps`, `drops`, `detector`, `clients`, `events`,
/// `mqtt`), those figures being the first camera's (the one of the
/// unprefixed routes), and adds `cameras`, every camera's figures by its
/// name, as Frigate's stats do; `mqtt` is the connection's.
///
/// Threads: `figures` on the publisher's thread; the detector count it
/// compares against is in a `Mutex`, the sink (attached once after it is
/// made) in another.
public final class MQTTStatsReport: Sendable {
    struct Figures: Encodable {
        struct FPS: Encodable { var capture: Double; var processed: Double; var sent: Double }
        struct Detector: Encodable { var facesPerSecond: Double }
        struct Clients: Encodable { var webSocket: Int; var mjpeg: Int }
        struct Events: Encodable { var open: Int; var stored: Int; var bytes: Int; var dropped: UInt64; var failed: UInt64 }

        var camera: String
        var fps: FPS
        var drops: [String: UInt64]
        var detector: Detector
        var clients: Clients
        var events: Events?
    }

    struct Message: Encodable {
        struct Link: Encodable { var published: UInt64; var dropped: UInt64; var queued: Int; var connections: UInt64; var failures: UInt64 }

        var camera: String?
        var time: Double
        var fps: Figures.FPS?
        var drops: [String: UInt64]?
        var detector: Figures.Detector?
        var clients: Figures.Clients?
        var events: Figures.Events?
        var mqtt: Link
        var cameras: [String: Figures]
    }

    /// The message for `cameras` (the first leads) on a connection of `status`.
    static func payload(cameras: [Figures], status: MQTTPublisher.Status) -> Data? {
        let first = cameras.first
        let message = Message(
            camera: first?.camera, time: MonotonicClock.wallSeconds(), fps: first?.fps, drops: first?.drops,
            detector: first?.detector, clients: first?.clients, events: first?.events,
            mqtt: .init(published: status.published, dropped: status.dropped, queued: status.queuedEvents,
                        connections: status.connections, failures: status.failures),
            cameras: Dictionary(cameras.map { ($0.camera, $0) }, uniquingKeysWith: { first, _ in first }))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try? encoder.encode(message)
    }

    private let camera: String
    private let stats: PipelineStats
    private let store: EventStore
    private let sink = Locked<EventSink?>(nil)
    private let previous = Locked<(count: UInt64, nanos: UInt64)?>(nil)

    public init(camera: String, stats: PipelineStats, store: EventStore) {
        self.camera = camera
        self.stats = stats
        self.store = store
    }

    public func attach(_ sink: EventSink) {
        self.sink.withLock { $0 = sink }
    }

    func figures() -> Figures {
        let snapshot = stats.snapshot()
        let now = MonotonicClock.nanos()
        let detections = snapshot.stages[.faceDetect]?.count ?? 0
        let rate = previous.withLock { previous -> Double in
            defer { previous = (detections, now) }
            guard let previous, now > previous.nanos, detections >= previous.count else { return 0 }
            return Double(detections - previous.count) / (Double(now - previous.nanos) / 1e9)
        }
        let round = { (value: Double) in value.rounded(toPlaces: 2) }
        var events: Figures.Events?
        if let sink = sink.withLock({ $0 }) {
            let totals = store.totals
            let recorder = sink.recorder.counts
            events = Figures.Events(open: sink.trackerCounts.open, stored: totals.events, bytes: totals.bytes,
                                    dropped: recorder.dropped, failed: recorder.failed)
        }
        return Figures(
            camera: camera,
            fps: .init(capture: round(snapshot.captureFPS), processed: round(snapshot.processedFPS), sent: round(snapshot.sentFPS)),
            drops: Dictionary(uniqueKeysWithValues: snapshot.drops.map { ($0.key.rawValue, $0.value) }),
            detector: .init(facesPerSecond: round(rate)),
            clients: .init(webSocket: snapshot.webSocketClients, mjpeg: snapshot.mjpegClients),
            events: events)
    }
}
