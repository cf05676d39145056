import CSightlineMQTT
import Foundation
import Logging
import Synchronization
import SightlineVision
import SightlineSupport
import SightlinePipeline
import SightlineHTTP

/// Publishes events, counts, snapshots, stats and Home Assistant discovery
/// to an MQTT broker through libmosquitto, on a thread of its own
/// (`sightline.mqtt`) that owns the connection (`MQTTSession`).
///
/// `enqueue` never waits (the pipeline thread calls it): it leaves messages
/// in the bounded `MQTTOutbox` and wakes the thread through an eventfd. A
/// broker that is away, slow or refusing costs the pipeline nothing: event
/// messages beyond `queueLimit` drop oldest first (counted), state topics
/// keep only their newest value. The thread reconnects with back-off
/// (`reconnectMinSeconds` doubling to `reconnectMaxSeconds`), republishes
/// `available`, the retained state and discovery after each reconnect, and
/// sends QoS 1 messages at most `maxInFlight` at a time.
///
/// Threads: `enqueue`, `setCatalog` and `status` from any thread; `start`
/// and `stop` from the main thread. Shared state is in `Mutex`es; the
/// eventfd is written by any thread and read only by the publisher's.
public final class MQTTPublisher: Sendable {
    public struct Status: Codable, Sendable, Equatable {
        public var broker: String
        public var clientId: String
        public var connected = false
        /// Messages the broker acknowledged (QoS 1) or that were written (QoS 0).
        public var published: UInt64 = 0
        /// Event messages dropped because the queue was full.
        public var dropped: UInt64 = 0
        /// Event messages and state topics waiting.
        public var queuedEvents = 0
        public var queuedStates = 0
        public var inFlight = 0
        /// Connections made, and attempts that failed or connections lost.
        public var connections: UInt64 = 0
        public var failures: UInt64 = 0
        public var lastError: String?
        /// Home Assistant configs published now.
        public var discoveryConfigs = 0
    }

    struct Control {
        var stopRequested = false
        var started = false
        var catalog: HomeAssistantDiscovery.Catalog?
        var catalogVersion = 0
    }

    public let options: MQTTOptions
    public let topics: MQTTTopics
    let outbox: MQTTOutbox
    let wakeFD: Int32
    let logger: Logger
    let statsPayload: @Sendable (Status) -> Data?
    let control = Mutex(Control())
    let state: Mutex<Status>
    private let finished = DispatchSemaphore(value: 0)

    /// `statsPayload` makes the `<prefix>/stats` message (publisher thread).
    public init(options: MQTTOptions, logger: Logger, statsPayload: @escaping @Sendable (Status) -> Data? = { _ in nil }) throws {
        try options.validate()
        let fd = slmqtt_wake_open()
        guard fd >= 0 else { throw ConfigError.invalid("mqtt: cannot make an eventfd (\(String(cString: strerror(errno))))") }
        self.options = options
        self.topics = options.topics
        self.logger = logger
        self.statsPayload = statsPayload
        wakeFD = fd
        outbox = MQTTOutbox(capacity: options.queueLimit, wake: { slmqtt_wake_signal(fd) })
        state = Mutex(Status(broker: "\(options.host):\(options.port)", clientId: options.clientID))
    }

    deinit { close(wakeFD) }

    // MARK: - Any thread

    /// Event messages, their snapshots and the counts (pipeline thread; never waits).
    public func enqueue(_ batch: EventBatch) {
        for change in batch.changes {
            outbox.push(.event(change.type, before: change.before, after: change.after))
            if change.bestChanged {
                outbox.pushState(MQTTMessage(topic: topics.snapshot(change.after.label), payload: change.bestJPEG,
                                             qos: 1, retain: true))
            }
        }
        for (label, count) in batch.counts ?? [:] {
            outbox.pushState(MQTTMessage(topic: topics.count(label), text: "\(count)", qos: 1, retain: true))
        }
        for (name, count) in batch.people ?? [:] {
            outbox.pushState(MQTTMessage(topic: topics.person(name), text: "\(count)", qos: 1, retain: true))
        }
    }

    /// The templates and people that exist now (for discovery and zero counts).
    public func setCatalog(_ catalog: HomeAssistantDiscovery.Catalog) {
        let changed = control.withLock { control -> Bool in
            guard control.catalog != catalog else { return false }
            control.catalog = catalog
            control.catalogVersion += 1
            return true
        }
        if changed { slmqtt_wake_signal(wakeFD) }
    }

    public var status: Status {
        let counts = outbox.counts
        return state.withLock { status in
            var copy = status
            copy.dropped = counts.dropped
            copy.queuedEvents = counts.events
            copy.queuedStates = counts.states
            return copy
        }
    }

    // MARK: - Main thread

    public func start() {
        control.withLock { $0.started = true }
        let thread = Thread { [self] in
            Thread.setOSName("sightline.mqtt")
            MQTTSession(publisher: self).run()
            finished.signal()
        }
        thread.name = "sightline.mqtt"
        thread.start()
        logger.info("mqtt: publishing", metadata: ["broker": "\(options.host):\(options.port)",
                                                   "prefix": "\(options.topicPrefix)", "camera": "\(options.camera)",
                                                   "homeAssistant": "\(options.homeAssistant)"])
    }

    /// Sends what waits (at most about 2 s), says `offline`, disconnects.
    public func stop() {
        let started = control.withLock { control -> Bool in
            control.stopRequested = true
            return control.started
        }
        slmqtt_wake_signal(wakeFD)
        if started { finished.wait() }
    }

    var stopRequested: Bool { control.withLock { $0.stopRequested } }
}
