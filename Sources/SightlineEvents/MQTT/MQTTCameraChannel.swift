import Foundation
import SightlineSupport
import Synchronization

/// One camera's way onto the server's shared broker connection
/// (`MQTTPublisher`): its events, counts and snapshots go into the
/// publisher's outbox in the camera's own lane, under its topics
/// (`<prefix>/<camera>/...`), and its catalog (templates, people, faces)
/// drives its zero counts and Home Assistant discovery. `attach` joins the
/// connection (the camera starts, `EventSink.start`); it stays attached
/// through the server's stop (its retained topics stay and availability
/// says `offline`). `detach` leaves it: `clear` for a camera removed at
/// runtime, whose retained topics and discovery configs are cleared; without
/// for one that never started.
///
/// Threads: `enqueue` from the camera's pipeline thread (never waits for the
/// broker; encodes an event's snapshot when its best frame changed and nobody
/// made that JPEG yet, at most once a message, `events.minUpdateSeconds`); the
/// rest from any thread; the catalog is in a `Mutex`.
public final class MQTTCameraChannel: Sendable {
    public let camera: String
    public let topics: MQTTTopics
    /// Event messages say `has_clip` (the camera records clips).
    public let clips: Bool
    public let publisher: MQTTPublisher
    /// The camera's figures in `<prefix>/stats` (nil: none).
    let report: MQTTStatsReport?
    let catalog = Locked<(catalog: HomeAssistantDiscovery.Catalog?, version: Int)>((nil, 0))

    init(publisher: MQTTPublisher, camera: String, clips: Bool, report: MQTTStatsReport?) {
        self.publisher = publisher
        self.camera = camera
        self.clips = clips
        self.report = report
        topics = MQTTTopics(prefix: publisher.options.topicPrefix, camera: camera)
    }

    /// The outbox lane of this camera.
    var lane: String { camera }

    /// Event messages, their snapshots and the counts (pipeline thread; never waits for the broker).
    public func enqueue(_ batch: EventBatch) {
        let outbox = publisher.outbox
        for change in batch.changes {
            outbox.push(.event(change.type, before: change.before, after: change.after, clips: clips), lane: lane)
            // The snapshot is made here if the events thread has not made it yet (once for both).
            if change.bestChanged, let snapshot = change.bestJPEG {
                outbox.pushState(MQTTMessage(topic: topics.snapshot(change.after.label), payload: snapshot,
                                             qos: 1, retain: true), lane: lane)
            }
        }
        for (label, count) in batch.counts ?? [:] {
            outbox.pushState(MQTTMessage(topic: topics.count(label), text: "\(count)", qos: 1, retain: true), lane: lane)
        }
        for (name, count) in batch.people ?? [:] {
            outbox.pushState(MQTTMessage(topic: topics.person(name), text: "\(count)", qos: 1, retain: true), lane: lane)
        }
    }

    /// The templates and people that exist now (for discovery and zero counts).
    public func setCatalog(_ catalog: HomeAssistantDiscovery.Catalog) {
        let changed = self.catalog.withLock { state -> Bool in
            guard state.catalog != catalog else { return false }
            state.catalog = catalog
            state.version += 1
            return true
        }
        if changed { publisher.wake() }
    }

    /// Joins the connection (the camera starts); again after `detach` is a no-op.
    public func attach() { publisher.attach(self) }

    /// Leaves the connection; `clear`: a camera removed for good, whose
    /// retained counts and snapshots and discovery configs are cleared.
    public func detach(clear: Bool) { publisher.detach(self, clear: clear) }

    /// The connection's status (shared by every camera on it).
    public var status: MQTTPublisher.Status { publisher.status }
}
