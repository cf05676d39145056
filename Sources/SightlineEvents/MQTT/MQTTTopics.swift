import Foundation

/// The topics Sightline publishes, following Frigate's where one exists:
/// - `<prefix>/available`: `online`, and `offline` as the last will (retained);
/// - `<prefix>/events`: `{"type", "before", "after"}` per event message (never retained);
/// - `<prefix>/<camera>/<label>`: how many of that label are in view (retained);
///   `<prefix>/<camera>/<label>/snapshot`: the best JPEG of its latest event (retained);
/// - `<prefix>/<camera>/face/<name>`: how many faces recognised as that person are in view (retained);
/// - `<prefix>/stats`: rates and counters every `statsSeconds`.
/// With several cameras (`cameras:`) they share the server's one broker
/// connection (`MQTTPublisher`), so `available` and `stats` are the
/// server's, as with one camera; events stay on `<prefix>/events`, each
/// naming its camera, and the rest is under each camera's name.
public struct MQTTTopics: Sendable, Equatable {
    public let prefix: String
    public let camera: String

    public init(prefix: String, camera: String) {
        self.prefix = prefix
        self.camera = camera
    }

    public var available: String { "\(prefix)/available" }
    public var events: String { "\(prefix)/events" }
    public var stats: String { "\(prefix)/stats" }
    /// Everything of this camera's but events: `<prefix>/<camera>/`.
    public var cameraPrefix: String { "\(prefix)/\(camera)/" }

    public func count(_ label: String) -> String { "\(prefix)/\(camera)/\(Self.level(label))" }
    public func snapshot(_ label: String) -> String { "\(prefix)/\(camera)/\(Self.level(label))/snapshot" }
    public func person(_ name: String) -> String {
        let level = Self.level(name)
        // "snapshot" under face/ is the face snapshot's topic.
        return "\(prefix)/\(camera)/\(EventTracker.faceLabel)/\(level == "snapshot" ? "snapshot_" : level)"
    }

    /// A name as one topic level: '/', '+', '#' and control characters become '_'.
    public static func level(_ name: String) -> String {
        let cleaned = String(name.unicodeScalars.map { scalar -> Character in
            "/+#".unicodeScalars.contains(scalar) || CharacterSet.controlCharacters.contains(scalar) ? "_" : Character(scalar)
        })
        return cleaned.isEmpty ? "_" : cleaned
    }

    /// Levels joined by '/', none empty, no wildcards.
    public static func isValidLevelPath(_ text: String) -> Bool {
        !text.isEmpty && !text.contains("+") && !text.contains("#")
            && text.split(separator: "/", omittingEmptySubsequences: false).allSatisfy { !$0.isEmpty }
    }
}
