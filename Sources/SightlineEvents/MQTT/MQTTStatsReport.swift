import Foundation
import Synchronization
import SightlineVision
import SightlineSupport
import SightlinePipeline
import SightlineHTTP

/// The `<prefix>/stats` message: frame rates (capture, processed, sent),
/// drops by reason, the face detector's rate, clients, events and the MQTT
/// link, made every `statsSeconds` on the publisher's thread.
///
/// Threads: `payload` on the publisher's thread; the detector count it
/// compares against is in a `Mutex`, the sink (attached once after it is
/// made) in another.
public final class MQTTStatsReport: Sendable {
    struct Message: Encodable {
        struct FPS: Encodable { var capture: Double; var processed: Double; var sent: Double }
        struct Detector: Encodable { var facesPerSecond: Double }
        struct Clients: Encodable { var webSocket: Int; var mjpeg: Int }
        struct Events: Encodable { var open: Int; var stored: Int; var bytes: Int; var dropped: UInt64; var failed: UInt64 }
        struct Link: Encodable { var published: UInt64; var dropped: UInt64; var queued: Int; var connections: UInt64; var failures: UInt64 }

        var camera: String
        var time: Double
        var fps: FPS
        var drops: [String: UInt64]
        var detector: Detector
        var clients: Clients
        var events: Events?
        var mqtt: Link
    }

    private let camera: String
    private let stats: PipelineStats
    private let store: EventStore
    private let sink = Mutex<EventSink?>(nil)
    private let previous = Mutex<(count: UInt64, nanos: UInt64)?>(nil)

    public init(camera: String, stats: PipelineStats, store: EventStore) {
        self.camera = camera
        self.stats = stats
        self.store = store
    }

    public func attach(_ sink: EventSink) {
        self.sink.withLock { $0 = sink }
    }

    public func payload(_ status: MQTTPublisher.Status) -> Data? {
        let snapshot = stats.snapshot()
        let now = MonotonicClock.nanos()
        let detections = snapshot.stages[.faceDetect]?.count ?? 0
        let rate = previous.withLock { previous -> Double in
            defer { previous = (detections, now) }
            guard let previous, now > previous.nanos, detections >= previous.count else { return 0 }
            return Double(detections - previous.count) / (Double(now - previous.nanos) / 1e9)
        }
        let round = { (value: Double) in value.rounded(toPlaces: 2) }
        var events: Message.Events?
        if let sink = sink.withLock({ $0 }) {
            let totals = store.totals
            let recorder = sink.recorder.counts
            events = Message.Events(open: sink.trackerCounts.open, stored: totals.events, bytes: totals.bytes,
                                    dropped: recorder.dropped, failed: recorder.failed)
        }
        let message = Message(
            camera: camera, time: MonotonicClock.wallSeconds(),
            fps: .init(capture: round(snapshot.captureFPS), processed: round(snapshot.processedFPS), sent: round(snapshot.sentFPS)),
            drops: Dictionary(uniqueKeysWithValues: snapshot.drops.map { ($0.key.rawValue, $0.value) }),
            detector: .init(facesPerSecond: round(rate)),
            clients: .init(webSocket: snapshot.webSocketClients, mjpeg: snapshot.mjpegClients),
            events: events,
            mqtt: .init(published: status.published, dropped: status.dropped, queued: status.queuedEvents,
                        connections: status.connections, failures: status.failures))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try? encoder.encode(message)
    }
}
