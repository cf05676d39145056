import Foundation
import Logging
import Synchronization
import SightlineSupport
import SightlinePipeline

/// Events as a sink: the tracker sees every frame, the disk and the broker
/// get what it says on threads of their own.
///
/// `deliver` (pipeline thread) runs the `EventTracker` on the frame's
/// detections under a `Mutex` (memory only, microseconds), so no track's
/// birth or death is ever skipped, whatever the disk or the broker do. What
/// changed goes, without waiting, to the `EventRecorder` (newest state per
/// event; snapshots, crops and the index on `sightline.events`) and to the
/// camera's `MQTTCameraChannel` onto the server's shared `MQTTPublisher` when
/// there is one (bounded outbox; `sightline.mqtt`), and
/// to the `ClipRecorder` when clips are on (`sightline.clips`).
/// The recorder's thread also ticks the tracker about every 250 ms, so
/// events end on time while no frames come, and every 2 s reads the
/// catalog (templates, people) for discovery and zero counts.
public final class EventSink: FrameSink {
    public let name = "events"

    /// What the sink's three threads share, each part guarding itself.
    private final class Shared: Sendable {
        let tracker: Locked<EventTracker>
        let publisher: MQTTCameraChannel?
        let clips: ClipRecorder?
        let catalog = LockedCallback<Void, HomeAssistantDiscovery.Catalog>()
        let lastCatalogRead = Atomic<UInt64>(0)
        /// The time `tick` ends events by (frames carry their own).
        let clock: any SightlineClock

        init(tracker: EventTracker, publisher: MQTTCameraChannel?, clips: ClipRecorder?, clock: any SightlineClock) {
            self.clock = clock
            self.tracker = Locked(tracker)
            self.publisher = publisher
            self.clips = clips
        }

        /// Recorder thread: ends what has gone while no frames come; reads the catalog every 2 s.
        func tick() -> EventBatch {
            let now = clock.nanos()
            let batch = tracker.withLock { $0.tick(nowNanos: now) }
            if !batch.isEmpty {
                publisher?.enqueue(batch)
                clips?.enqueue(batch)
            }
            if let publisher, now &- lastCatalogRead.load(ordering: .relaxed) >= 2_000_000_000,
               let read = catalog() {
                lastCatalogRead.store(now, ordering: .relaxed)
                publisher.setCatalog(read)
            }
            return batch
        }
    }

    private let shared: Shared
    public let recorder: EventRecorder
    public let publisher: MQTTCameraChannel?
    public let clips: ClipRecorder?
    private let delivered = Atomic<UInt64>(0)
    /// Whether the tracker followed a face after the last frame (pipeline thread writes).
    private let followsFaces = Atomic<Bool>(false)

    public init(options: EventTracker.Options, store: EventStore, publisher: MQTTCameraChannel?, clips: ClipRecorder? = nil,
                logger: Logger, storageFailures: StorageFailureReporter = StorageFailureReporter(),
                clock: any SightlineClock = .real) {
        let shared = Shared(tracker: EventTracker(options: options), publisher: publisher, clips: clips, clock: clock)
        self.shared = shared
        self.publisher = publisher
        self.clips = clips
        recorder = EventRecorder(store: store, logger: logger, storageFailures: storageFailures, tick: { shared.tick() })
    }

    /// Where the catalog comes from (read on the recorder's thread every 2 s).
    public func watchCatalog(_ read: @escaping @Sendable () -> HomeAssistantDiscovery.Catalog) {
        shared.catalog.setAction(read)
        shared.publisher?.setCatalog(read())
    }

    public func deliver(_ frame: ProcessedFrame) {
        delivered.add(1, ordering: .relaxed)
        let (batch, faces) = shared.tracker.withLock { tracker in (tracker.observe(frame), tracker.followsFaces) }
        followsFaces.store(faces, ordering: .relaxed)
        guard !batch.isEmpty else { return }
        recorder.enqueue(batch)
        publisher?.enqueue(batch)
        clips?.enqueue(batch)
    }

    /// With a broker: live, always (faces are published whenever they happen).
    /// Otherwise `following` while a face is followed for an event, so its
    /// boxes (in the clip, the event's best frame) and its end come at the
    /// full rate, or the settled rate while nothing changes; a new face is
    /// found at the idle rate first.
    public var faceUse: FaceUse {
        if publisher != nil { return .live }
        return followsFaces.load(ordering: .relaxed) ? .following : .none
    }

    /// Every frame is seen by the tracker; none is skipped.
    public var counts: SinkCounts {
        let count = delivered.load(ordering: .relaxed)
        return SinkCounts(delivered: count, consumed: count)
    }

    /// Tracked things, open events, flickers filtered, detections not followed.
    public struct TrackerCounts: Codable, Sendable, Equatable {
        public var tracked: Int
        public var open: Int
        public var filtered: UInt64
        public var untracked: UInt64
    }

    public var trackerCounts: TrackerCounts {
        shared.tracker.withLock {
            TrackerCounts(tracked: $0.trackedCount, open: $0.openCount, filtered: $0.filtered, untracked: $0.untracked)
        }
    }

    public func start() throws {
        recorder.start()
        publisher?.attach()
        clips?.start()
    }

    /// After the pipeline stopped: open events end, are written and handed to the publisher, then the threads stop.
    public func stop() {
        let batch = shared.tracker.withLock { $0.finishAll(nowNanos: shared.clock.nanos()) }
        recorder.enqueue(batch)
        publisher?.enqueue(batch)
        clips?.enqueue(batch)
        recorder.stop()
        clips?.stop()
        // The channel stays attached: the server stops the shared publisher
        // after its cameras (sending what waits), and a camera removed at
        // runtime leaves it through `MQTTCameraChannel.detach`.
    }
}
