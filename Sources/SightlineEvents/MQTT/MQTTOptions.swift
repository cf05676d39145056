import Foundation
import SightlineSupport
import SightlinePipeline

/// How to reach the broker and what to publish there (config `mqtt.*`).
public struct MQTTOptions: Sendable, Equatable {
    public var host: String
    public var port = 1883
    public var username: String?
    public var password: String?
    /// TLS: the CA that signed the broker's certificate (PEM); with
    /// `certFile` and `keyFile`, a client certificate as well.
    public var caFile: String?
    public var certFile: String?
    public var keyFile: String?
    /// Default: `sightline-<camera>`, the camera being the first camera's name
    /// (the connection is the server's, shared by every camera).
    public var clientID: String
    public var topicPrefix = "sightline"
    /// The first camera's name (for the default client id and `topics`).
    public var camera: String
    /// Seconds between keep-alive pings; the broker sends the last will after 1.5 times this without one.
    public var keepalive = 30
    /// Event messages kept while the broker is away; beyond it the oldest are dropped (counted).
    public var queueLimit = 500
    /// Reconnect back-off: from `reconnectMinSeconds`, doubling, to `reconnectMaxSeconds`.
    public var reconnectMinSeconds = 0.5
    public var reconnectMaxSeconds = 4.0
    /// Seconds between `<prefix>/stats` messages (0: none).
    public var statsSeconds = 60.0
    public var homeAssistant = false
    public var discoveryPrefix = "homeassistant"
    /// QoS 1 messages handed to libmosquitto and not yet acknowledged, at most.
    public var maxInFlight = 20

    public init(host: String, camera: String, clientID: String? = nil) {
        self.host = host
        self.camera = camera
        self.clientID = clientID ?? "sightline-\(camera)"
    }

    public var topics: MQTTTopics { MQTTTopics(prefix: topicPrefix, camera: camera) }

    /// Checks values; the message names the setting.
    public func validate() throws {
        guard !host.isEmpty else { throw ConfigError.invalid("mqtt.host is empty") }
        guard (1...65535).contains(port) else { throw ConfigError.invalid("mqtt.port must be 1-65535, got \(port)") }
        guard !clientID.isEmpty, clientID.utf8.count <= 128 else {
            throw ConfigError.invalid("mqtt.clientId must be 1-128 bytes")
        }
        for (key, value) in [("mqtt.topicPrefix", topicPrefix), ("mqtt.discoveryPrefix", discoveryPrefix)] {
            guard MQTTTopics.isValidLevelPath(value) else {
                throw ConfigError.invalid("\(key) must be topic levels without '+', '#' or empty levels, got '\(value)'")
            }
        }
        guard (5...3600).contains(keepalive) else { throw ConfigError.invalid("mqtt.keepalive must be 5-3600 seconds") }
        guard (1...100_000).contains(queueLimit) else { throw ConfigError.invalid("mqtt.queueLimit must be 1-100000") }
        guard reconnectMinSeconds > 0, reconnectMaxSeconds >= reconnectMinSeconds, reconnectMaxSeconds <= 600 else {
            throw ConfigError.invalid("mqtt.reconnectMaxSeconds must be between \(reconnectMinSeconds) and 600")
        }
        guard statsSeconds == 0 || statsSeconds >= 1 else { throw ConfigError.invalid("mqtt.statsSeconds must be 0 or >= 1") }
        guard (certFile == nil) == (keyFile == nil) else {
            throw ConfigError.invalid("mqtt.certFile and mqtt.keyFile go together (a client certificate and its key)")
        }
        for path in [caFile, certFile, keyFile].compactMap({ $0 }) where !FileManager.default.isReadableFile(atPath: path) {
            throw ConfigError.invalid("mqtt: cannot read \(path)")
        }
    }
}
