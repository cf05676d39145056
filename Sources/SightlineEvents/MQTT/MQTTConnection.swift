import CSightlineMQTT
import Foundation

/// One libmosquitto client for one connection attempt: made, connected,
/// used and destroyed on the publisher's thread, never anywhere else
/// (libmosquitto in its non-threaded mode, driven by that thread's loop).
/// A lost connection is never reused: the publisher makes a new one, so no
/// message hides in libmosquitto's own queues across reconnects.
///
/// libmosquitto's callbacks run inside `read`, `write` and `misc` on that
/// same thread; they only append to `happened`, which the publisher reads.
final class MQTTConnection {
    enum Happening: Equatable {
        case connected
        /// CONNACK refused the connection (bad credentials, ...).
        case refused(String)
        case disconnected(String)
        /// The broker acknowledged a QoS 1 message.
        case acknowledged(Int32)
        case message(topic: String, payload: Data, retained: Bool)
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private static let libraryReady: Bool = {
        mosquitto_lib_init()
        return true
    }()

    private var handle: OpaquePointer?
    var happened: [Happening] = []

    init(options: MQTTOptions) throws {
        _ = Self.libraryReady
        handle = nil
        guard let made = mosquitto_new(options.clientID, true, nil) else {
            throw Failure(description: "mosquitto_new failed (\(String(cString: strerror(errno))))")
        }
        handle = made
        mosquitto_user_data_set(made, Unmanaged.passUnretained(self).toOpaque())
        try check(mosquitto_max_inflight_messages_set(made, UInt32(options.maxInFlight)), "max in-flight")
        let will = Array("offline".utf8)
        try check(mosquitto_will_set(made, options.topics.available, Int32(will.count), will, 1, true), "last will")
        if options.username != nil || options.password != nil {
            try check(mosquitto_username_pw_set(made, options.username ?? "", options.password), "username and password")
        }
        if options.caFile != nil || options.certFile != nil {
            try check(mosquitto_tls_set(made, options.caFile, nil, options.certFile, options.keyFile, nil), "TLS files")
        }
        mosquitto_connect_callback_set(made) { mosq, _, code in
            MQTTConnection.owner(mosq)?.happened.append(
                code == 0 ? .connected : .refused(String(cString: mosquitto_connack_string(code))))
        }
        mosquitto_disconnect_callback_set(made) { mosq, _, code in
            MQTTConnection.owner(mosq)?.happened.append(
                .disconnected(code == 0 ? "disconnected" : String(cString: mosquitto_strerror(code))))
        }
        mosquitto_publish_callback_set(made) { mosq, _, mid in
            MQTTConnection.owner(mosq)?.happened.append(.acknowledged(mid))
        }
        mosquitto_message_callback_set(made) { mosq, _, message in
            guard let message, let topic = message.pointee.topic else { return }
            let length = Int(message.pointee.payloadlen)
            let payload = length > 0 && message.pointee.payload != nil
                ? Data(bytes: message.pointee.payload, count: length) : Data()
            MQTTConnection.owner(mosq)?.happened.append(
                .message(topic: String(cString: topic), payload: payload, retained: message.pointee.retain))
        }
    }

    deinit {
        if let handle { mosquitto_destroy(handle) }
    }

    private static func owner(_ mosq: OpaquePointer?) -> MQTTConnection? {
        guard let mosq, let user = mosquitto_userdata(mosq) else { return nil }
        return Unmanaged<MQTTConnection>.fromOpaque(user).takeUnretainedValue()
    }

    /// Starts connecting (the TCP connect does not wait; CONNACK arrives in `read`).
    func connect(host: String, port: Int, keepalive: Int) throws {
        try check(mosquitto_connect_async(handle, host, Int32(port), Int32(keepalive)), "connect to \(host):\(port)")
    }

    /// Hands a message to libmosquitto; the message id (for QoS 1 acknowledgements).
    func publish(_ message: MQTTMessage) throws -> Int32 {
        var mid: Int32 = 0
        let code = message.payload.withUnsafeBytes { raw in
            mosquitto_publish(handle, &mid, message.topic, Int32(raw.count), raw.baseAddress, message.qos, message.retain)
        }
        try check(code, "publish to \(message.topic)")
        return mid
    }

    func subscribe(_ pattern: String, qos: Int32 = 1) throws {
        try check(mosquitto_subscribe(handle, nil, pattern, qos), "subscribe to \(pattern)")
    }

    func disconnect() {
        _ = mosquitto_disconnect(handle)
    }

    /// Waits up to `timeoutMs` for the socket or the wake-up (see `slmqtt_wait`).
    func wait(wakeFD: Int32, timeoutMs: Int32) -> Int32 {
        slmqtt_wait(handle, wakeFD, timeoutMs)
    }

    func read() throws { try check(mosquitto_loop_read(handle, 16), "read") }
    func write() throws { try check(mosquitto_loop_write(handle, 16), "write") }
    /// Keep-alive pings and retries; call at least once a second.
    func misc() throws { try check(mosquitto_loop_misc(handle), "keep-alive") }

    var wantsWrite: Bool { mosquitto_want_write(handle) }

    /// The one place libmosquitto's return codes become Swift errors.
    private func check(_ code: Int32, _ what: String) throws {
        guard code != Int32(MOSQ_ERR_SUCCESS.rawValue) else { return }
        let reason = code == Int32(MOSQ_ERR_ERRNO.rawValue)
            ? String(cString: strerror(errno)) : String(cString: mosquitto_strerror(code))
        throw Failure(description: "\(what): \(reason)")
    }
}
