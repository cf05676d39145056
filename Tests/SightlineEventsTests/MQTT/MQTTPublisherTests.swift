import Foundation
import Logging
import Testing
@testable import SightlinePipeline
@testable import SightlineEvents
import SightlineTesting
import SightlineEventsTesting

/// The publisher against a real Mosquitto broker on a free loopback port.
/// Waits are generous and only bound how long a failure takes; nothing here
/// judges speed. Skipped, saying why, where mosquitto is not installed.
@Suite(.serialized, .enabled(if: MosquittoBroker.isInstalled, MosquittoBroker.skipMessage))
struct MQTTPublisherTests {
    typealias S = StoredEvents

    static func options(port: Int, queue: Int = 500, homeAssistant: Bool = false) -> MQTTOptions {
        var options = MQTTOptions(host: "127.0.0.1", camera: "door")
        options.port = port
        options.queueLimit = queue
        options.statsSeconds = 0
        options.homeAssistant = homeAssistant
        options.reconnectMaxSeconds = 1
        return options
    }

    static func batch(_ type: EventChange.Kind, _ record: EventRecord, counts: [String: Int]? = nil) -> EventBatch {
        EventBatch(changes: [EventChange(type: type, before: record, after: record, frameTime: record.lastTime, frameNanos: 0,
                                         bestJPEG: Data("jpeg of \(record.id)".utf8), bestChanged: type == .new)],
                   counts: counts)
    }

    static func waitUntil(_ seconds: Double = 20, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return condition()
    }

    static func eventType(_ message: TestSubscriber.Received) -> String? {
        ((try? JSONSerialization.jsonObject(with: message.payload)) as? [String: Any])?["type"] as? String
    }

    @Test func eventsCountsSnapshotsAndAvailability() throws {
        let broker = try MosquittoBroker()
        let subscriber = TestSubscriber(port: broker.port, pattern: "sightline/#")
        defer { subscriber.stop() }
        #expect(subscriber.waitConnected())
        let publisher = try MQTTPublisher(options: Self.options(port: broker.port), logger: Logger(label: "test"))
        let door = publisher.channel(camera: "door")
        door.setCatalog(.init(templates: ["logo"], faces: true))
        door.attach()
        publisher.start()
        #expect(subscriber.waitFor { $0.contains { $0.topic == "sightline/available" && $0.text == "online" } })
        #expect(subscriber.waitFor { $0.contains { $0.topic == "sightline/door/logo" && $0.text == "0" } }, "zero counts at start")
        let record = S.record(1, open: true)
        door.enqueue(Self.batch(.new, record, counts: ["logo": 1]))
        // State topics keep only their newest value: let the 1 go out before the 0 comes.
        #expect(subscriber.waitFor { $0.contains { $0.topic == "sightline/door/logo" && $0.text == "1" } })
        var ended = record
        ended.endTime = ended.lastTime
        door.enqueue(Self.batch(.end, ended, counts: ["logo": 0]))
        #expect(subscriber.waitFor { $0.filter { $0.topic == "sightline/events" }.count == 2 })
        let events = subscriber.messages(on: "sightline/events")
        #expect(events.map(Self.eventType) == ["new", "end"])
        #expect(events.allSatisfy { !$0.retained })
        #expect(subscriber.waitFor { $0.last { $0.topic == "sightline/door/logo" }?.text == "0" })
        #expect(subscriber.messages(on: "sightline/door/logo").map(\.text).suffix(2) == ["1", "0"])
        #expect(subscriber.messages(on: "sightline/door/logo/snapshot").last?.payload == Data("jpeg of \(record.id)".utf8))
        publisher.stop()
        #expect(subscriber.waitFor { $0.last { $0.topic == "sightline/available" }?.text == "offline" })
        #expect(publisher.status.published >= 5 && publisher.status.dropped == 0)
        // What a newcomer sees: retained state, never events.
        let late = TestSubscriber(port: broker.port, pattern: "sightline/#")
        defer { late.stop() }
        #expect(late.waitFor { $0.contains { $0.topic == "sightline/door/logo/snapshot" } })
        #expect(late.waitFor(2) { $0.contains { $0.topic == "sightline/events" } } == false)
        #expect(late.messages.allSatisfy { $0.retained })
    }

    @Test func aBrokerOutageKeepsTheNewestEventsThatFitAndReconnects() throws {
        let broker = try MosquittoBroker()
        let publisher = try MQTTPublisher(options: Self.options(port: broker.port, queue: 3), logger: Logger(label: "test"))
        let door = publisher.channel(camera: "door")
        door.attach()
        publisher.start()
        defer { publisher.stop() }
        #expect(Self.waitUntil { publisher.status.connected })
        // Killed at once, so `online` may still wait for its PUBACK: it must
        // not be sent twice after the reconnect (CI once counted 5 here).
        broker.stop()
        #expect(Self.waitUntil { !publisher.status.connected })
        let records = (1...5).map { S.record($0) }
        for record in records { door.enqueue(Self.batch(.update, record)) }
        #expect(publisher.status.dropped == 2 && publisher.status.queuedEvents == 3)
        let publishedBefore = publisher.status.published
        try broker.start()
        let subscriber = TestSubscriber(port: broker.port, pattern: "sightline/events")
        defer { subscriber.stop() }
        #expect(Self.waitUntil { publisher.status.connected && publisher.status.connections >= 2 })
        // Acknowledged by the broker: `online` and the three events that fit.
        #expect(Self.waitUntil { publisher.status.published >= publishedBefore + 4 && publisher.status.queuedEvents == 0 })
        #expect(publisher.status.published == publishedBefore + 4 && publisher.status.dropped == 2)
        // The subscriber raced the publisher to the restarted broker: what it saw is the newest three, or their end.
        _ = subscriber.waitFor(2) { $0.count >= 3 }
        let ids = subscriber.messages.compactMap {
            (((try? JSONSerialization.jsonObject(with: $0.payload)) as? [String: Any])?["after"] as? [String: Any])?["id"] as? String
        }
        #expect(Array(records.suffix(3).map(\.id)).suffix(ids.count) == ids[...], "\(ids)")
    }

    @Test func discoveryFollowsTheCatalogAndRemovesWhatIsGone() throws {
        let broker = try MosquittoBroker()
        // A config left on the broker by an earlier run, for a template that no longer exists.
        let stale = "homeassistant/binary_sensor/sightline_door/template_old/config"
        let earlier = try MQTTPublisher(options: Self.options(port: broker.port, homeAssistant: true), logger: Logger(label: "test"))
        let before = earlier.channel(camera: "door")
        before.setCatalog(.init(templates: ["old", "logo"]))
        before.attach()
        earlier.start()
        let watcher = TestSubscriber(port: broker.port, pattern: "homeassistant/#")
        defer { watcher.stop() }
        #expect(watcher.waitFor { $0.contains { $0.topic == stale && !$0.payload.isEmpty } })
        earlier.stop()

        let publisher = try MQTTPublisher(options: Self.options(port: broker.port, homeAssistant: true), logger: Logger(label: "test"))
        let door = publisher.channel(camera: "door")
        door.setCatalog(.init(templates: ["logo", "cup"], people: ["Ada"], faces: true))
        door.attach()
        publisher.start()
        defer { publisher.stop() }
        #expect(watcher.waitFor { $0.contains { $0.topic == stale && $0.payload.isEmpty } }, "the stale config is removed")
        let cup = "homeassistant/binary_sensor/sightline_door/template_cup/config"
        #expect(watcher.waitFor { $0.contains { $0.topic == cup && !$0.payload.isEmpty } })
        door.setCatalog(.init(templates: ["logo"], people: [], faces: true))
        #expect(watcher.waitFor { $0.contains { $0.topic == cup && $0.payload.isEmpty } }, "a deleted template's config goes")
        let cupCamera = "homeassistant/camera/sightline_door/template_cup_snapshot/config"
        #expect(watcher.waitFor { $0.contains { $0.topic == cupCamera && $0.payload.isEmpty } })
        let person = watcher.messages.first { $0.topic.contains("/person_") && !$0.payload.isEmpty }?.topic
        #expect(person != nil)
        #expect(watcher.waitFor { $0.contains { $0.topic == person && $0.payload.isEmpty } }, "a forgotten person's config goes")
        // A newcomer sees exactly the configs of what exists (an empty payload
        // is a removal still passing through, not a config).
        let late = TestSubscriber(port: broker.port, pattern: "homeassistant/#")
        defer { late.stop() }
        let configs = { (messages: [TestSubscriber.Received]) in messages.filter { !$0.payload.isEmpty } }
        #expect(late.waitFor { configs($0).count >= 4 })
        _ = late.waitFor(1) { configs($0).count > 4 }
        #expect(Set(configs(late.messages).map(\.topic)) == [
            "homeassistant/binary_sensor/sightline_door/template_logo/config",
            "homeassistant/camera/sightline_door/template_logo_snapshot/config",
            "homeassistant/sensor/sightline_door/faces/config",
            "homeassistant/camera/sightline_door/face_snapshot/config",
        ])
        #expect(publisher.status.discoveryConfigs == 4)
    }

    static func json(_ data: Data?) -> [String: Any]? {
        data.flatMap { (try? JSONSerialization.jsonObject(with: $0)) as? [String: Any] }
    }

    /// Two cameras on the server's one connection: one client id, one
    /// `available`, one stats message carrying both; events and counts each
    /// under its camera; a camera removed for good has its retained topics
    /// and discovery configs cleared, the other's stay.
    @Test func twoCamerasShareOneConnectionAndARemovedOneIsCleared() throws {
        let broker = try MosquittoBroker()
        let subscriber = TestSubscriber(port: broker.port, pattern: "#")
        defer { subscriber.stop() }
        #expect(subscriber.waitConnected())
        var options = Self.options(port: broker.port, homeAssistant: true)
        options.clientID = "sl"
        let publisher = try MQTTPublisher(options: options, logger: Logger(label: "test"))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mqtt-two-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func report(_ camera: String) throws -> MQTTStatsReport {
            let store = EventStore(dataDirectory: (directory as NSString).appendingPathComponent(camera),
                                   limits: EventStore.Limits())
            _ = try store.load()
            return MQTTStatsReport(camera: camera, stats: PipelineStats(), store: store)
        }
        let door = publisher.channel(camera: "door", report: try report("door"))
        let yard = publisher.channel(camera: "yard", clips: true, report: try report("yard"))
        door.setCatalog(.init(templates: ["logo"]))
        yard.setCatalog(.init(templates: ["cup"]))
        door.attach()
        yard.attach()
        publisher.start()
        #expect(subscriber.waitFor { $0.contains { $0.topic == "sightline/available" && $0.text == "online" } })
        door.enqueue(Self.batch(.new, S.record(1, open: true), counts: ["logo": 1]))
        yard.enqueue(Self.batch(.new, S.record(2, label: "cup", open: true), counts: ["cup": 2]))
        #expect(subscriber.waitFor { $0.filter { $0.topic == "sightline/events" }.count == 2 })
        let clips = subscriber.messages(on: "sightline/events").map { (Self.json($0.payload)?["after"] as? [String: Any])?["has_clip"] as? Bool }
        #expect(Set(clips) == [false, true], "each camera's own clips setting")
        #expect(subscriber.waitFor { $0.last { $0.topic == "sightline/door/logo" }?.text == "1" })
        #expect(subscriber.waitFor { $0.last { $0.topic == "sightline/yard/cup" }?.text == "2" })
        let yardConfig = "homeassistant/binary_sensor/sightline_yard/template_cup/config"
        #expect(subscriber.waitFor { $0.contains { $0.topic == yardConfig && !$0.payload.isEmpty } })
        let availability = (Self.json(subscriber.messages(on: yardConfig).last?.payload)?["availability"] as? [[String: Any]])?.first
        #expect(availability?["topic"] as? String == "sightline/available", "the server's availability")
        #expect(publisher.status.connections == 1 && publisher.status.clientId == "sl" && publisher.cameras == ["door", "yard"])
        #expect(!subscriber.messages.contains { $0.topic.hasSuffix("/available") && $0.topic != "sightline/available" })

        // One stats message for the server: the first camera's figures at the top, as with one camera, and each camera's.
        let stats = try #require(Self.json(publisher.statsPayload()))
        #expect(stats["camera"] as? String == "door" && stats["fps"] is [String: Any] && stats["mqtt"] is [String: Any])
        let each = try #require(stats["cameras"] as? [String: Any])
        #expect(Set(each.keys) == ["door", "yard"] && (each["yard"] as? [String: Any])?["fps"] is [String: Any])

        yard.detach(clear: true)
        #expect(subscriber.waitFor { $0.last { $0.topic == "sightline/yard/cup" }?.payload.isEmpty == true })
        #expect(subscriber.waitFor { $0.last { $0.topic == yardConfig }?.payload.isEmpty == true })
        #expect(subscriber.waitFor { $0.last { $0.topic == "sightline/yard/cup/snapshot" }?.payload.isEmpty == true })
        #expect(publisher.cameras == ["door"] && (Self.json(publisher.statsPayload())?["cameras"] as? [String: Any])?.count == 1)
        // A newcomer sees the door's retained topics and nothing of the yard's.
        let late = TestSubscriber(port: broker.port, pattern: "#")
        defer { late.stop() }
        #expect(late.waitFor { $0.contains { $0.topic == "sightline/door/logo" } })
        _ = late.waitFor(1) { $0.contains { $0.topic.contains("yard") } }
        #expect(!late.messages.contains { $0.topic.contains("yard") && !$0.payload.isEmpty })
        publisher.stop()
        #expect(subscriber.waitFor { $0.last { $0.topic == "sightline/available" }?.text == "offline" })
    }
}
