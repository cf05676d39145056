import CSightlineMQTT
import Foundation
import Logging
import Synchronization
import SightlineSupport
import SightlinePipeline

/// The server's broker connection, shared by every camera: publishes
/// events, counts, snapshots, stats and Home Assistant discovery through
/// libmosquitto, on a thread of its own (`sightline.mqtt`) that owns the
/// connection (`MQTTSession`). One per distinct broker configuration
/// (`MQTTConnections`), normally one for the server: one client id, one
/// last will on `<prefix>/available`, one `<prefix>/stats`.
///
/// Each camera reaches it through its `MQTTCameraChannel` (`channel`), which
/// leaves messages in the bounded `MQTTOutbox`, in the camera's lane, and
/// wakes the thread through an eventfd; `enqueue` never waits. A broker that
/// is away, slow or refusing costs the pipelines nothing: event messages
/// beyond `queueLimit` (for the whole connection) drop oldest first from the
/// camera holding the most (counted), state topics keep only their newest
/// value, and the lanes take turns. The thread reconnects with back-off
/// (`reconnectMinSeconds` doubling to `reconnectMaxSeconds`), republishes
/// `available`, the retained state and discovery after each reconnect, and
/// sends QoS 1 messages at most `maxInFlight` at a time.
///
/// Threads: `channel`, `attach`, `detach` and `status` from any thread;
/// `start` and `stop` from the main thread. Shared state is in `Mutex`es;
/// the eventfd is written by any thread and read only by the publisher's.
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
        /// The cameras on the connection, in the order they attached (the first's figures lead `<prefix>/stats`).
        var channels: [MQTTCameraChannel] = []
        /// Cameras that left and what to do about their topics (the session takes them).
        var leaving: [(channel: MQTTCameraChannel, clear: Bool)] = []
    }

    public let options: MQTTOptions
    public let topics: MQTTTopics
    let outbox: MQTTOutbox
    let wakeFD: Int32
    let logger: Logger
    let control = Locked(Control())
    let state: Locked<Status>
    private let finished = DispatchSemaphore(value: 0)

    public init(options: MQTTOptions, logger: Logger) throws {
        try options.validate()
        let fd = slmqtt_wake_open()
        guard fd >= 0 else { throw ConfigError.invalid("mqtt: cannot make an eventfd (\(String(cString: strerror(errno))))") }
        self.options = options
        self.topics = options.topics
        self.logger = logger
        wakeFD = fd
        outbox = MQTTOutbox(capacity: options.queueLimit, wake: { slmqtt_wake_signal(fd) })
        state = Locked(Status(broker: "\(options.host):\(options.port)", clientId: options.clientID))
    }

    deinit { close(wakeFD) }

    // MARK: - Any thread

    /// A camera's channel onto this connection (not attached yet); `report`: its figures in `<prefix>/stats`.
    public func channel(camera: String, clips: Bool = false, report: MQTTStatsReport? = nil) -> MQTTCameraChannel {
        MQTTCameraChannel(publisher: self, camera: camera, clips: clips, report: report)
    }

    func attach(_ channel: MQTTCameraChannel) {
        control.withLock { control in
            guard !control.channels.contains(where: { $0 === channel }) else { return }
            control.leaving.removeAll { $0.channel === channel }
            control.channels.append(channel)
        }
        wake()
    }

    func detach(_ channel: MQTTCameraChannel, clear: Bool) {
        control.withLock { control in
            guard let index = control.channels.firstIndex(where: { $0 === channel }) else { return }
            control.channels.remove(at: index)
            control.leaving.append((channel, clear))
        }
        wake()
    }

    /// The cameras on the connection now.
    public var cameras: [String] { control.withLock { $0.channels.map(\.camera) } }

    func wake() { slmqtt_wake_signal(wakeFD) }

    /// The `<prefix>/stats` message (publisher thread): every camera's figures.
    func statsPayload() -> Data? {
        let reports = control.withLock { $0.channels.compactMap(\.report) }
        return MQTTStatsReport.payload(cameras: reports.map { $0.figures() }, status: status)
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
                                                   "prefix": "\(options.topicPrefix)", "clientId": "\(options.clientID)",
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
