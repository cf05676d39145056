import Foundation
import Logging
import Synchronization
import SightlineSupport
import SightlineVision
import SightlinePipeline
import SightlineHTTP
import SightlineEvents

/// The server's broker connections: one `MQTTPublisher` per distinct broker
/// configuration (`MQTTSettings`), shared by every camera configured for it.
/// A camera's `mqtt:` is the top level's (`cameras:` cannot set its own), so
/// there is one for the whole server; were cameras to differ, each distinct
/// broker would get its own connection. The first camera to ask names the
/// default client id (`sightline-<camera>`); a configured `clientId` is used
/// as it is. Publishers made before `start` start with it, those made after
/// (a camera added at runtime, on a broker of its own) at once; `stop` stops
/// them after the cameras, so their last events go out before `offline`.
///
/// Threads: `publisher` from the main thread or the request worker
/// (`CameraRegistry`); `start` and `stop` from the main thread; the table is
/// in a `Mutex`.
public final class MQTTConnections: Sendable {
    private struct State {
        var publishers: [(settings: MQTTSettings, publisher: MQTTPublisher)] = []
        var started = false
    }

    private let state = Locked(State())
    private let logger: Logger

    public init(logger: Logger) {
        self.logger = logger
    }

    /// The connection for `settings` (nil while MQTT is off), made on first use.
    func publisher(for settings: MQTTSettings, camera: String, environment: [String: String]) throws -> MQTTPublisher? {
        guard settings.enabled else { return nil }
        return try state.withLock { state -> MQTTPublisher in
            if let known = state.publishers.first(where: { $0.settings == settings }) { return known.publisher }
            guard let options = settings.options(camera: camera, environment: environment) else {
                throw ConfigError.invalid("mqtt: no options")
            }
            let made = try MQTTPublisher(options: options, logger: logger)
            state.publishers.append((settings, made))
            if state.started { made.start() }
            return made
        }
    }

    /// Every connection now.
    public var publishers: [MQTTPublisher] { state.withLock { $0.publishers.map(\.publisher) } }

    public func start() {
        let now = state.withLock { state -> [MQTTPublisher] in
            state.started = true
            return state.publishers.map(\.publisher)
        }
        for publisher in now { publisher.start() }
    }

    public func stop() {
        let now = state.withLock { state -> [MQTTPublisher] in
            state.started = false
            return state.publishers.map(\.publisher)
        }
        for publisher in now { publisher.stop() }
    }
}
