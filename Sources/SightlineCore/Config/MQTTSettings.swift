import Foundation
import SightlineEvents

/// The MQTT broker and what to publish there (config `mqtt.*`); off while `host` is empty.
public struct MQTTSettings: Sendable, Equatable {
    public var host = ""
    public var port = 1883
    public var username: String?
    /// Or env SIGHTLINE_MQTT_PASSWORD.
    public var password: String?
    public var caFile: String?
    public var certFile: String?
    public var keyFile: String?
    /// Empty: sightline-<camera> (the first camera's: one connection for the server).
    public var clientId: String?
    public var topicPrefix = "sightline"
    public var keepalive = 30
    public var queueLimit = 500
    public var reconnectMaxSeconds = 4.0
    public var statsSeconds = 60.0
    public var homeAssistant = false
    public var discoveryPrefix = "homeassistant"

    public init() {}

    public var enabled: Bool { !host.isEmpty }

    /// The publisher's options for this camera; nil while off.
    public func options(camera: String, environment: [String: String] = [:]) -> MQTTOptions? {
        guard enabled else { return nil }
        var options = MQTTOptions(host: host, camera: camera, clientID: clientId)
        options.port = port
        options.username = username
        options.password = password ?? environment["SIGHTLINE_MQTT_PASSWORD"].flatMap { $0.isEmpty ? nil : $0 }
        options.caFile = caFile
        options.certFile = certFile
        options.keyFile = keyFile
        options.topicPrefix = topicPrefix
        options.keepalive = keepalive
        options.queueLimit = queueLimit
        options.reconnectMaxSeconds = reconnectMaxSeconds
        options.reconnectMinSeconds = min(0.5, reconnectMaxSeconds)
        options.statsSeconds = statsSeconds
        options.homeAssistant = homeAssistant
        options.discoveryPrefix = discoveryPrefix
        return options
    }
}
