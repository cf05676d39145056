import CSightlineMQTT
import Foundation
import Logging
import SightlineSupport

/// The publisher's thread: connects, reconnects with back-off, drains the
/// outbox while at most `maxInFlight` QoS 1 messages wait for the broker,
/// keeps the connection alive, publishes stats, and keeps each camera's
/// zero counts and Home Assistant discovery in step with its catalog; takes
/// cameras as they attach and, for one removed (`detach(clear: true)`),
/// clears its retained topics and discovery configs. Made and used only on that thread
/// (`sightline.mqtt`), so its state needs no lock; what others read goes to
/// the publisher's `state` mutex.
final class MQTTSession {
    private struct InFlight {
        var mid: Int32
        var lane: String
        var message: MQTTMessage
    }

    /// A camera on the connection: its discovery and what of it is published.
    private final class CameraSync {
        let channel: MQTTCameraChannel
        let discovery: HomeAssistantDiscovery
        /// Discovery configs as published.
        var desired: [String: Data] = [:]
        var syncedCatalog = -1
        var subscribed = false

        init(channel: MQTTCameraChannel, discoveryPrefix: String) {
            self.channel = channel
            discovery = HomeAssistantDiscovery(topics: channel.topics, discoveryPrefix: discoveryPrefix)
        }
    }

    private let publisher: MQTTPublisher
    private let options: MQTTOptions
    private var connection: MQTTConnection?
    private var connected = false
    private var connectStarted: UInt64 = 0
    private var failuresInARow = 0
    private var nextAttempt: UInt64 = 0
    private var inFlight: [InFlight] = []
    /// The last retained message per topic, republished after a reconnect
    /// (the broker may have restarted without them).
    private var retained: [String: (lane: String, message: MQTTMessage)] = [:]
    /// The cameras attached, by channel.
    private var cameras: [ObjectIdentifier: CameraSync] = [:]
    private var nextStats: UInt64
    /// A CONNACK must come within this after connecting.
    private let connectTimeout: UInt64 = 10_000_000_000

    init(publisher: MQTTPublisher) {
        self.publisher = publisher
        options = publisher.options
        nextStats = MonotonicClock.nanos() + Self.nanos(publisher.options.statsSeconds)
    }

    private static func nanos(_ seconds: Double) -> UInt64 { UInt64(max(0, seconds) * 1e9) }

    // MARK: - Loop

    func run() {
        while !publisher.stopRequested {
            step()
        }
        shutDown()
    }

    private func step() {
        let now = MonotonicClock.nanos()
        if connection == nil, now >= nextAttempt { attemptConnection(now: now) }
        if connection != nil, !connected, now &- connectStarted > connectTimeout {
            lost("no answer to CONNECT within \(connectTimeout / 1_000_000_000) s")
        }
        if options.statsSeconds > 0, now >= nextStats {
            nextStats = now + Self.nanos(options.statsSeconds)
            if let payload = publisher.statsPayload() {
                publisher.outbox.pushState(MQTTMessage(topic: publisher.topics.stats, payload: payload, qos: 0))
            }
        }
        syncCameras()
        drain()
        poll(timeoutMs: timeout(now: now))
    }

    private func timeout(now: UInt64) -> Int32 {
        var wait: UInt64 = 1_000_000_000  // keep-alive work at least once a second
        if connection == nil { wait = min(wait, nextAttempt > now ? nextAttempt - now : 0) }
        if options.statsSeconds > 0 { wait = min(wait, nextStats > now ? nextStats - now : 0) }
        return Int32(max(1, wait / 1_000_000))
    }

    /// Waits for the socket or a wake-up, then lets libmosquitto read, write and keep alive.
    private func poll(timeoutMs: Int32) {
        guard let connection else {
            _ = slmqtt_wait(nil, publisher.wakeFD, timeoutMs)
            return
        }
        let flags = connection.wait(wakeFD: publisher.wakeFD, timeoutMs: timeoutMs)
        do {
            if flags < 0 { throw MQTTConnection.Failure(description: "poll: \(String(cString: strerror(-flags)))") }
            if flags & Int32(SLMQTT_READABLE | SLMQTT_HANGUP) != 0 { try connection.read() }
            if connection.wantsWrite { try connection.write() }
            try connection.misc()
        } catch {
            handle(connection.happened)
            if self.connection != nil { lost("\(error)") }
            return
        }
        handle(connection.happened)
    }

    private func handle(_ happenings: [MQTTConnection.Happening]) {
        guard let connection else { return }
        connection.happened.removeAll()
        for happening in happenings {
            guard self.connection != nil else { return }
            switch happening {
            case .connected:
                becameConnected()
            case .refused(let why):
                lost("the broker refused the connection: \(why)")
            case .disconnected(let why):
                lost("connection lost: \(why)")
            case .acknowledged(let mid):
                if let index = inFlight.firstIndex(where: { $0.mid == mid }) {
                    inFlight.remove(at: index)
                    publisher.state.withLock { $0.published += 1; $0.inFlight = inFlight.count }
                }
            case .message(let topic, let payload, _):
                removeIfStale(topic: topic, payload: payload)
            }
        }
    }

    // MARK: - Connecting

    private func attemptConnection(now: UInt64) {
        do {
            let made = try MQTTConnection(options: options)
            connection = made
            connectStarted = now
            try made.connect(host: options.host, port: options.port, keepalive: options.keepalive)
            handle(made.happened)
        } catch {
            lost("\(error)")
        }
    }

    private func becameConnected() {
        connected = true
        failuresInARow = 0
        publisher.state.withLock { $0.connected = true; $0.connections += 1; $0.lastError = nil }
        publisher.logger.info("mqtt: connected", metadata: ["broker": "\(options.host):\(options.port)"])
        send(MQTTMessage(topic: publisher.topics.available, text: "online", qos: 1, retain: true))
        for (topic, kept) in retained where topic != publisher.topics.available {
            publisher.outbox.pushStateIfAbsent(kept.message, lane: kept.lane)
        }
        for camera in cameras.values { camera.subscribed = false }
        subscribeDiscovery()
    }

    /// Closes the connection; what was in flight goes back to the outbox
    /// (sent again: at least once), and the next attempt waits the back-off.
    private func lost(_ why: String) {
        let wasConnected = connected
        var events: [MQTTOutbox.Entry] = []
        for pending in inFlight {
            // `online` is announced afresh by the next connection: sent
            // again from here it would go out twice.
            if pending.message.topic == publisher.topics.available { continue }
            if pending.message.retain {
                publisher.outbox.pushStateIfAbsent(pending.message, lane: pending.lane)
            } else {
                events.append(MQTTOutbox.Entry(lane: pending.lane, item: .message(pending.message)))
            }
        }
        publisher.outbox.requeue(events)
        inFlight.removeAll()
        connection = nil
        connected = false
        failuresInARow += 1
        let delay = min(options.reconnectMaxSeconds,
                        options.reconnectMinSeconds * pow(2, Double(min(failuresInARow - 1, 30))))
        nextAttempt = MonotonicClock.nanos() + Self.nanos(delay)
        publisher.state.withLock { status in
            status.connected = false
            status.failures += 1
            status.lastError = why
            status.inFlight = 0
        }
        let message: Logger.Message = "mqtt: \(why); trying again in \(String(format: "%.1f", delay)) s"
        if wasConnected || failuresInARow == 1 {
            publisher.logger.warning(message)
        } else {
            publisher.logger.debug(message)
        }
    }

    // MARK: - Sending

    private func drain() {
        while connected, inFlight.count < options.maxInFlight, let entry = publisher.outbox.next() {
            guard let message = format(entry.item) else { continue }
            send(message, lane: entry.lane)
        }
    }

    private func format(_ item: MQTTOutbox.Item) -> MQTTMessage? {
        switch item {
        case .message(let message):
            return message
        case .event(let type, let before, let after, let clips):
            guard let payload = try? MQTTEventPayload(type: type, before: before, after: after, clips: clips).jsonData() else {
                return nil
            }
            return MQTTMessage(topic: publisher.topics.events, payload: payload, qos: 1, retain: false)
        }
    }

    private func send(_ message: MQTTMessage, lane: String = MQTTOutbox.serverLane) {
        guard let connection else { return }
        do {
            let mid = try connection.publish(message)
            if message.qos > 0 {
                inFlight.append(InFlight(mid: mid, lane: lane, message: message))
                publisher.state.withLock { $0.inFlight = inFlight.count }
            } else {
                publisher.state.withLock { $0.published += 1 }
            }
            if message.retain {
                if message.payload.isEmpty {
                    retained.removeValue(forKey: message.topic)
                } else {
                    retained[message.topic] = (lane, message)
                }
            }
        } catch {
            if message.retain {
                publisher.outbox.pushStateIfAbsent(message, lane: lane)
            } else if message.topic == publisher.topics.events {
                publisher.outbox.requeue([MQTTOutbox.Entry(lane: lane, item: .message(message))])
            }
            lost("\(error)")
        }
    }

    // MARK: - Cameras, catalogs and discovery

    /// Takes cameras that attached or left, then brings each camera's zero
    /// counts and discovery in step with its catalog where it changed.
    private func syncCameras() {
        let (channels, leaving) = publisher.control.withLock { control in
            defer { control.leaving.removeAll() }
            return (control.channels, control.leaving)
        }
        for (channel, clear) in leaving { leave(channel, clear: clear) }
        var added = false
        for channel in channels where cameras[ObjectIdentifier(channel)] == nil {
            cameras[ObjectIdentifier(channel)] = CameraSync(channel: channel, discoveryPrefix: options.discoveryPrefix)
            added = true
        }
        if added { subscribeDiscovery() }
        for camera in cameras.values { syncCatalog(camera) }
        let configs = cameras.values.reduce(0) { $0 + $1.desired.count }
        publisher.state.withLock { $0.discoveryConfigs = configs }
    }

    /// Zero counts for templates and people nobody has counted yet, and the
    /// discovery configs when Home Assistant is on; runs when the catalog changed.
    private func syncCatalog(_ camera: CameraSync) {
        let channel = camera.channel
        let (catalog, version) = channel.catalog.withLock { ($0.catalog, $0.version) }
        guard let catalog, version != camera.syncedCatalog else { return }
        camera.syncedCatalog = version
        let topics = channel.topics
        var countTopics = catalog.templates.map { topics.count($0) } + catalog.people.map { topics.person($0) }
        if catalog.faces { countTopics.append(topics.count(EventTracker.faceLabel)) }
        for topic in countTopics where retained[topic] == nil {
            publisher.outbox.pushStateIfAbsent(MQTTMessage(topic: topic, text: "0", qos: 1, retain: true), lane: channel.lane)
        }
        guard options.homeAssistant else { return }
        let configs = camera.discovery.configs(for: catalog)
        for (topic, payload) in configs where camera.desired[topic] != payload {
            publisher.outbox.pushState(MQTTMessage(topic: topic, payload: payload, qos: 1, retain: true), lane: channel.lane)
        }
        for topic in camera.desired.keys where configs[topic] == nil {
            publisher.outbox.pushState(MQTTMessage(topic: topic, payload: Data(), qos: 1, retain: true), lane: channel.lane)
        }
        camera.desired = configs
    }

    /// A camera left: forgotten; removed for good (`clear`), its retained
    /// topics (counts, snapshots: sent or waiting) and discovery configs are
    /// cleared with empty retained messages, so neither a newcomer nor Home
    /// Assistant sees a camera that is gone. Its event messages still go out.
    private func leave(_ channel: MQTTCameraChannel, clear: Bool) {
        let camera = cameras.removeValue(forKey: ObjectIdentifier(channel))
        guard clear else { return }
        var topics = Set(retained.filter { $0.value.lane == channel.lane }.map(\.key))
        topics.formUnion(publisher.outbox.waitingStateTopics(lane: channel.lane))
        if let camera { topics.formUnion(camera.desired.keys) }
        for topic in topics.sorted() {
            retained.removeValue(forKey: topic)
            publisher.outbox.pushState(MQTTMessage(topic: topic, payload: Data(), qos: 1, retain: true), lane: channel.lane)
        }
        publisher.logger.info("mqtt: camera removed; its retained topics and discovery configs cleared",
                              metadata: ["camera": "\(channel.camera)", "topics": "\(topics.count)"])
    }

    /// Home Assistant: subscribes to each camera's configs (to find ones left from before), once per connection.
    private func subscribeDiscovery() {
        guard options.homeAssistant, connected, let connection else { return }
        for camera in cameras.values where !camera.subscribed {
            do {
                try connection.subscribe(camera.discovery.subscription)
                camera.subscribed = true
            } catch {
                lost("\(error)")
                return
            }
        }
    }

    /// A config of a camera of this server left on the broker from before
    /// (a template or person deleted while the server was down): removed.
    private func removeIfStale(topic: String, payload: Data) {
        guard options.homeAssistant, !payload.isEmpty,
              let camera = cameras.values.first(where: { $0.discovery.owns(topic) }),
              camera.syncedCatalog >= 0, camera.desired[topic] == nil else { return }
        publisher.outbox.pushState(MQTTMessage(topic: topic, payload: Data(), qos: 1, retain: true), lane: camera.channel.lane)
    }

    // MARK: - Stopping

    /// Sends what waits (up to 2 s), publishes `offline` (the broker keeps the
    /// will for unclean ends only), and disconnects.
    private func shutDown() {
        guard connection != nil else { return }
        let deadline = MonotonicClock.nanos() + 2_000_000_000
        var offlineSent = false
        for _ in 0..<10_000 where connection != nil && MonotonicClock.nanos() < deadline {
            if connected && !offlineSent && publisher.outbox.isEmpty && inFlight.isEmpty {
                send(MQTTMessage(topic: publisher.topics.available, text: "offline", qos: 1, retain: true))
                offlineSent = true
            }
            if offlineSent && inFlight.isEmpty && connection?.wantsWrite != true { break }
            drain()
            poll(timeoutMs: 50)
        }
        connection?.disconnect()
        if let connection, connection.wantsWrite { try? connection.write() }
        connection = nil
        publisher.state.withLock { $0.connected = false }
    }
}
