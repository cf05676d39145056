import Foundation
import Synchronization
import Testing
@testable import SightlineSupport
@testable import SightlineEvents
import SightlineTesting

/// A real Mosquitto broker (Debian's `mosquitto`) on a free loopback port,
/// for the tests. Tests that need it are enabled only when it is installed
/// (`isInstalled`), so a machine without it reports them skipped, with
/// `skipMessage`, never passed.
final class MosquittoBroker {
    static let binary = ["/usr/sbin/mosquitto", "/usr/bin/mosquitto"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static var isInstalled: Bool { binary != nil }
    static let skipMessage: Comment = "mosquitto is not installed (apt-get install mosquitto; scripts/setup.sh --tests does): these tests need a real broker"

    let port: Int
    private let directory: String
    private var process: Process?

    init() throws {
        guard Self.binary != nil else { throw MQTTConnection.Failure(description: Self.skipMessage.rawValue) }
        directory = try TestPaths.temporaryDirectory()
        port = try Self.freePort()
        let config = "listener \(port) 127.0.0.1\nallow_anonymous true\npersistence false\n"
        try config.write(toFile: directory + "/mosquitto.conf", atomically: true, encoding: .utf8)
        try start()
    }

    deinit { stop() }

    /// Starts it (again, on the same port) and waits until it accepts connections.
    func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary!)
        process.arguments = ["-c", directory + "/mosquitto.conf"]
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        self.process = process
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if Self.accepts(port: port) { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        throw MQTTConnection.Failure(description: "mosquitto did not listen on \(port) within 10 s")
    }

    /// Stops it (SIGKILL: the test runs on a libdispatch worker thread, which blocks
    /// SIGTERM, and a spawned child inherits that mask) and waits for it to exit.
    func stop() {
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw -> Int32 in
                guard bind(fd, raw, length) == 0 else { return -1 }
                return getsockname(fd, raw, &length)
            }
        }
        guard bound == 0 else { throw MQTTConnection.Failure(description: "no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}

/// A subscriber on its own thread through libmosquitto (a client separate
/// from the publisher under test), recording every message it receives.
final class TestSubscriber: Sendable {
    struct Received: Sendable, Equatable {
        var topic: String
        var payload: Data
        var retained: Bool
        var text: String { String(decoding: payload, as: UTF8.self) }
    }

    private let received = Locked<[Received]>([])
    private let connected = Atomic<Bool>(false)
    private let stopRequested = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    /// Connects to the broker on `port` and subscribes to `pattern` (QoS 1).
    init(port: Int, pattern: String = "#") {
        let thread = Thread { [self] in
            defer { finished.signal() }
            // Its own prefix, so its last will never lands on the topics under test.
            var options = MQTTOptions(host: "127.0.0.1", camera: "subscriber", clientID: "test-sub-\(UUID().uuidString.prefix(8))")
            options.topicPrefix = "test-subscriber"
            guard let client = try? MQTTConnection(options: options),
                  (try? client.connect(host: "127.0.0.1", port: port, keepalive: 30)) != nil else { return }
            let wake = Int32(-1)
            let deadline = Date().addingTimeInterval(120)
            while !stopRequested.load(ordering: .relaxed), Date() < deadline {
                let flags = client.wait(wakeFD: wake, timeoutMs: 20)
                do {
                    if flags > 0 && flags & 9 != 0 { try client.read() }  // readable or hung up
                    if client.wantsWrite { try client.write() }
                    try client.misc()
                } catch {
                    break
                }
                let happened = client.happened
                client.happened.removeAll()
                for happening in happened {
                    switch happening {
                    case .connected:
                        try? client.subscribe(pattern)
                        connected.store(true, ordering: .relaxed)
                    case .message(let topic, let payload, let retained):
                        received.withLock { $0.append(Received(topic: topic, payload: payload, retained: retained)) }
                    default:
                        break
                    }
                }
            }
            client.disconnect()
            if client.wantsWrite { try? client.write() }
        }
        thread.start()
    }

    func stop() {
        stopRequested.store(true, ordering: .relaxed)
        finished.wait()
    }

    var messages: [Received] { received.withLock { $0 } }

    func messages(on topic: String) -> [Received] { messages.filter { $0.topic == topic } }

    /// Waits up to `seconds` for `condition` on what was received.
    @discardableResult
    func waitFor(_ seconds: Double = 15, _ condition: ([Received]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition(messages) { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return condition(messages)
    }

    func waitConnected(_ seconds: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if connected.load(ordering: .relaxed) { return true }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return false
    }
}
