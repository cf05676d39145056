import Foundation

/// One message to publish.
public struct MQTTMessage: Sendable, Equatable {
    public var topic: String
    public var payload: Data
    public var qos: Int32
    public var retain: Bool

    public init(topic: String, payload: Data, qos: Int32 = 1, retain: Bool = false) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
    }

    public init(topic: String, text: String, qos: Int32 = 1, retain: Bool = false) {
        self.init(topic: topic, payload: Data(text.utf8), qos: qos, retain: retain)
    }
}
