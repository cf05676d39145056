import Foundation
import SightlineSupport

/// Home Assistant MQTT discovery (`mqtt.homeAssistant: true`): retained
/// configs under `<discoveryPrefix>/<component>/sightline_<camera>/<object>/config`
/// that make each camera a device with
/// - per template: a binary sensor "<label> in view" and a camera entity
///   showing the best snapshot of its latest event;
/// - with faces on: a sensor "Faces in view" and a camera entity for the
///   latest face snapshot;
/// - per known person: a binary sensor "<name> in view" (a person is a
///   state worth automating on, "Ada is home"; an `event` entity would only
///   fire on recognitions);
/// all with availability on `<prefix>/available`, the server's (one broker
/// connection for every camera, so one last will). A config whose template
/// or person is gone is removed by publishing an empty retained message to
/// its topic (which is how Home Assistant deletes an entity).
public struct HomeAssistantDiscovery: Sendable, Equatable {
    /// What the entities are made from.
    public struct Catalog: Sendable, Equatable {
        public var templates: [String]
        public var people: [String]
        public var faces: Bool

        public init(templates: [String] = [], people: [String] = [], faces: Bool = false) {
            self.templates = templates
            self.people = people
            self.faces = faces
        }
    }

    public let topics: MQTTTopics
    public let discoveryPrefix: String
    public let version: String

    public init(topics: MQTTTopics, discoveryPrefix: String = "homeassistant", version: String = SightlineVersion.string) {
        self.topics = topics
        self.discoveryPrefix = discoveryPrefix
        self.version = version
    }

    /// The node id shared by this camera's configs.
    public var nodeID: String { "sightline_" + Self.slug(topics.camera) }

    /// Matches every config of this camera (to find ones left from before).
    public var subscription: String { "\(discoveryPrefix)/+/\(nodeID)/+/config" }

    /// Whether `topic` is one of this camera's config topics.
    public func owns(_ topic: String) -> Bool {
        let levels = topic.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        let prefix = discoveryPrefix.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        return levels.count == prefix.count + 4 && Array(levels.prefix(prefix.count)) == prefix
            && levels[prefix.count + 1] == nodeID && levels.last == "config"
    }

    /// Every config topic and its JSON payload for `catalog`.
    public func configs(for catalog: Catalog) -> [String: Data] {
        var configs: [String: Data] = [:]
        let inView = "{{ 'ON' if (value | int(0)) > 0 else 'OFF' }}"
        for label in catalog.templates {
            let object = "template_" + Self.slug(label)
            configs[topic("binary_sensor", object)] = payload([
                "name": "\(label) in view", "unique_id": uniqueID(object), "object_id": "\(nodeID)_\(object)",
                "state_topic": topics.count(label), "value_template": inView,
                "payload_on": "ON", "payload_off": "OFF", "icon": "mdi:image-search",
            ])
            configs[topic("camera", object + "_snapshot")] = payload([
                "name": "\(label) snapshot", "unique_id": uniqueID(object + "_snapshot"),
                "object_id": "\(nodeID)_\(object)_snapshot", "topic": topics.snapshot(label),
            ])
        }
        if catalog.faces {
            configs[topic("sensor", "faces")] = payload([
                "name": "Faces in view", "unique_id": uniqueID("faces"), "object_id": "\(nodeID)_faces",
                "state_topic": topics.count(EventTracker.faceLabel), "state_class": "measurement",
                "icon": "mdi:face-recognition",
            ])
            configs[topic("camera", "face_snapshot")] = payload([
                "name": "Face snapshot", "unique_id": uniqueID("face_snapshot"), "object_id": "\(nodeID)_face_snapshot",
                "topic": topics.snapshot(EventTracker.faceLabel),
            ])
        }
        for name in catalog.people {
            let object = "person_" + Self.slug(name)
            configs[topic("binary_sensor", object)] = payload([
                "name": "\(name) in view", "unique_id": uniqueID(object), "object_id": "\(nodeID)_\(object)",
                "state_topic": topics.person(name), "value_template": inView,
                "payload_on": "ON", "payload_off": "OFF", "device_class": "occupancy",
            ])
        }
        return configs
    }

    private func topic(_ component: String, _ object: String) -> String {
        "\(discoveryPrefix)/\(component)/\(nodeID)/\(object)/config"
    }

    private func uniqueID(_ object: String) -> String { "\(nodeID)_\(object)" }

    private func payload(_ fields: [String: String]) -> Data {
        var object: [String: Any] = fields
        object["availability"] = [["topic": topics.available, "payload_available": "online",
                                   "payload_not_available": "offline"]]
        object["device"] = ["identifiers": [nodeID], "name": "Sightline \(topics.camera)", "manufacturer": "Sightline",
                            "model": "Sightline camera server", "sw_version": version] as [String: Any]
        object["origin"] = ["name": "Sightline", "sw_version": version]
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
    }

    /// Lowercase ASCII letters, digits and '_' (Home Assistant's object ids);
    /// a name that had to change gets 8 hex digits of its hash, so "my logo"
    /// and "my_logo" stay two entities.
    public static func slug(_ name: String) -> String {
        var out = ""
        var lastWasUnderscore = false
        for scalar in name.lowercased().unicodeScalars {
            if scalar.isASCII, CharacterSet.alphanumerics.contains(scalar) {
                out.unicodeScalars.append(scalar)
                lastWasUnderscore = false
            } else if !lastWasUnderscore {
                out.append("_")
                lastWasUnderscore = true
            }
        }
        out = out.trimmingCharacters(in: CharacterSet(charactersIn: "_"))
        if out == name && !out.isEmpty { return out }
        var hash: UInt32 = 2_166_136_261  // FNV-1a, stable across runs and machines
        for byte in name.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        return (out.isEmpty ? "x" : out) + "_" + String(format: "%08x", hash)
    }
}
