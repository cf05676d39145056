import Foundation
import Testing
@testable import SightlineEvents
import SightlineEventsTesting

@Suite struct MQTTMessagesTests {
    typealias S = StoredEvents

    static func message(_ n: Int, topic: String = "t") -> MQTTMessage { MQTTMessage(topic: topic, text: "\(n)") }

    @Test func theOutboxDropsTheOldestEventsAndKeepsTheNewestState() {
        let outbox = MQTTOutbox(capacity: 3)
        for n in 1...5 { outbox.push(.message(Self.message(n, topic: "events"))) }
        for n in 1...4 { outbox.pushState(Self.message(n, topic: "count")) }
        outbox.pushState(Self.message(1, topic: "snapshot"))
        outbox.pushStateIfAbsent(Self.message(9, topic: "count"))
        #expect(outbox.counts == MQTTOutbox.Counts(events: 3, states: 2, dropped: 2))
        var sent: [MQTTMessage] = []
        while let entry = outbox.next() {
            guard case .message(let message) = entry.item else { continue }
            sent.append(message)
        }
        #expect(sent.map { "\($0.topic)=\(String(decoding: $0.payload, as: UTF8.self))" }
                == ["events=3", "events=4", "events=5", "count=4", "snapshot=1"], "events first, then each state's newest")
        outbox.push(.message(Self.message(6, topic: "events")))
        outbox.requeue([4, 5].map { MQTTOutbox.Entry(lane: MQTTOutbox.serverLane, item: .message(Self.message($0, topic: "events"))) })
        outbox.push(.message(Self.message(7, topic: "events")))
        #expect(outbox.counts.dropped == 3, "requeued in front; the oldest goes when full")
        guard case .message(let first) = outbox.next()?.item else { Issue.record("empty"); return }
        #expect(first.payload == Data("5".utf8))
    }

    /// Two cameras on the one connection: a flood from one drops its own
    /// oldest events, and the other's count goes out within a turn.
    @Test func aCameraFloodingEventsNeitherDropsNorDelaysAnothers() {
        let outbox = MQTTOutbox(capacity: 4)
        outbox.push(.message(Self.message(1, topic: "yard-event")), lane: "yard")
        for n in 1...10 { outbox.push(.message(Self.message(n, topic: "door-event")), lane: "door") }
        outbox.pushState(Self.message(2, topic: "yard/logo"), lane: "yard")
        outbox.pushState(Self.message(1, topic: "stats"))
        #expect(outbox.counts == MQTTOutbox.Counts(events: 4, states: 2, dropped: 7))
        #expect(outbox.waitingStateTopics(lane: "yard") == ["yard/logo"])
        var sent: [String] = []
        while let entry = outbox.next() {
            guard case .message(let message) = entry.item else { continue }
            sent.append("\(entry.lane):\(message.topic)=\(String(decoding: message.payload, as: UTF8.self))")
        }
        #expect(sent == ["yard:yard-event=1", "door:door-event=8", ":stats=1", "yard:yard/logo=2",
                         "door:door-event=9", "door:door-event=10"],
                "the flooding lane lost its own oldest; lanes take turns, events first within each")
        #expect(outbox.isEmpty && outbox.counts == MQTTOutbox.Counts(events: 0, states: 0, dropped: 7))
    }

    @Test func eventsHaveFrigatesShape() throws {
        var before = S.record(1, kind: .face, open: true)
        before.best.roll = -4.5
        before.best.yaw = 12
        before.best.smile = 0.25
        before.best.eyesClosed = false
        var after = before
        after.name = "Ada"
        after.nameConfidence = 0.81234
        after.lastSeq += 10
        let data = try MQTTEventPayload(type: .update, before: before, after: after).jsonData()
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(json["type"] as? String == "update")
        let a = try #require(json["after"] as? [String: Any]), b = try #require(json["before"] as? [String: Any])
        for key in ["id", "camera", "label", "sub_label", "score", "top_score", "box", "box_normalized", "frame_time",
                    "start_time", "end_time", "has_snapshot", "snapshot"] {
            #expect(a.keys.contains(key), "after lacks \(key)")
        }
        #expect(b["sub_label"] is NSNull && b["end_time"] is NSNull, "null, as Frigate sends, not omitted")
        let subLabel = try #require(a["sub_label"] as? [Any])
        #expect(subLabel.first as? String == "Ada" && (subLabel.last as? Double) == 0.8123)
        #expect(a["box"] as? [Int] == [16, 12, 48, 36], "pixels of a 64x48 frame, [x1, y1, x2, y2]")
        #expect(a["label"] as? String == "face" && a["track_id"] as? Int == 1 && a["kind"] as? String == "face")
        #expect(a["roll"] as? Double == -4.5 && a["yaw"] as? Double == 12 && a["smile"] as? Double == 0.25)
        #expect(a["eyes_closed"] as? Bool == false)
        #expect(a["frame_seq"] as? Int == 200 && b["frame_seq"] as? Int == 190)
        let snapshot = try #require(a["snapshot"] as? [String: Any])
        #expect(snapshot["seq"] as? Int == 105 && snapshot["box"] as? [Int] == [16, 12, 48, 36])
        let template = try MQTTEventPayload(type: .new, before: S.record(2), after: S.record(2)).jsonData()
        let t = try #require(try JSONSerialization.jsonObject(with: template) as? [String: Any])
        #expect(((t["after"] as? [String: Any])?.keys).map { !$0.contains("roll") && !$0.contains("track_id") } == true,
                "unknown fields are omitted")
    }

    @Test func topicsFollowFrigateAndStayTopicSafe() {
        let topics = MQTTTopics(prefix: "sightline", camera: "door")
        #expect(topics.available == "sightline/available" && topics.events == "sightline/events")
        #expect(topics.count("my logo") == "sightline/door/my logo")
        #expect(topics.snapshot("face") == "sightline/door/face/snapshot")
        #expect(topics.person("A/B+C#") == "sightline/door/face/A_B_C_")
        #expect(topics.person("snapshot") == "sightline/door/face/snapshot_")
        #expect(MQTTTopics.isValidLevelPath("home/cams") && !MQTTTopics.isValidLevelPath("a//b")
                && !MQTTTopics.isValidLevelPath("a/#") && !MQTTTopics.isValidLevelPath(""))
    }

    @Test func homeAssistantConfigsCarryWhatHomeAssistantRequires() throws {
        let discovery = HomeAssistantDiscovery(topics: MQTTTopics(prefix: "sightline", camera: "door"), version: "1.2")
        let configs = discovery.configs(for: .init(templates: ["my logo", "my_logo"], people: ["Ada"], faces: true))
        #expect(configs.count == 2 * 2 + 2 + 1)
        var uniqueIDs = Set<String>()
        for (topic, data) in configs {
            #expect(discovery.owns(topic), "\(topic)")
            let config = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            let component = topic.split(separator: "/")[1]
            let stateKey = component == "camera" ? "topic" : "state_topic"
            #expect((config[stateKey] as? String)?.hasPrefix("sightline/door/") == true, "\(topic) \(stateKey)")
            let unique = try #require(config["unique_id"] as? String)
            uniqueIDs.insert(unique)
            let device = try #require(config["device"] as? [String: Any])
            #expect(device["identifiers"] as? [String] == ["sightline_door"] && device["name"] as? String == "Sightline door")
            let availability = try #require(config["availability"] as? [[String: Any]])
            #expect(availability.first?["topic"] as? String == "sightline/available")
            #expect(availability.first?["payload_not_available"] as? String == "offline")
        }
        #expect(uniqueIDs.count == configs.count, "my logo and my_logo are two entities")
        #expect(configs["homeassistant/binary_sensor/sightline_door/template_my_logo/config"] != nil)
        #expect(configs.keys.contains { $0.hasPrefix("homeassistant/binary_sensor/sightline_door/template_my_logo_") })
        #expect(discovery.subscription == "homeassistant/+/sightline_door/+/config")
        #expect(!discovery.owns("homeassistant/sensor/sightline_other/x/config"))
        #expect(!discovery.owns("homeassistant/sensor/sightline_door/x/state"))
        #expect(HomeAssistantDiscovery.slug("Ada") != HomeAssistantDiscovery.slug("ada"))
    }
}
