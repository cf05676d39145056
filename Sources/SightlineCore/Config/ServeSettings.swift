import Foundation
import SightlineVision
import SightlineSupport
import SightlinePipeline
import SightlineHTTP
import SightlineEvents

/// Everything `serve` needs, resolved from defaults, the config file and
/// flags (in that order of precedence, flags last): the server's settings
/// (`ServerSettings`), the top level's camera settings (`CameraSettings`,
/// every camera's defaults) and the cameras of `cameras:` with what each
/// sets of its own. Plain values only, kept apart from runtime state.
///
/// Members of both parts read through (`settings.port`, `settings.source`).
/// Each camera runs as a `ConfiguredCamera` (`cameraSettings()`), with the
/// server's settings beside it.
@dynamicMemberLookup
public struct ServeSettings: Sendable {
    /// The server's settings, shared by every camera.
    public var server = ServerSettings()
    /// The top level's camera settings: the one camera's without `cameras:`,
    /// every camera's defaults with it (a camera's own: `cameraSettings()`).
    public var own = CameraSettings()

    /// `settings.port` for `settings.server.port`, `settings.source` for `settings.own.source`.
    public subscript<T>(dynamicMember path: WritableKeyPath<ServerSettings, T>) -> T {
        get { server[keyPath: path] }
        set { server[keyPath: path] = newValue }
    }

    public subscript<T>(dynamicMember path: KeyPath<ServerSettings, T>) -> T {
        server[keyPath: path]
    }

    public subscript<T>(dynamicMember path: WritableKeyPath<CameraSettings, T>) -> T {
        get { own[keyPath: path] }
        set { own[keyPath: path] = newValue }
    }

    public subscript<T>(dynamicMember path: KeyPath<CameraSettings, T>) -> T {
        own[keyPath: path]
    }

    /// `cameras:` in the file's order; none: one camera from the settings above.
    public var cameras: [NamedCamera] = []

    /// One camera of `cameras:` and what it overrides (the values the config gives it).
    public struct NamedCamera: Sendable {
        public var name: String
        public var overrides: [SettingAssignment]

        public init(name: String, overrides: [SettingAssignment]) {
            self.name = name
            self.overrides = overrides
        }
    }

    public init() {}

    public init(server: ServerSettings, own: CameraSettings) {
        self.server = server
        self.own = own
    }

    /// Each camera as it runs, the first being the camera of the unprefixed
    /// routes. Without `cameras:`, one: the top level's camera settings,
    /// named (in routes, events and topics) `cameraName`, on the data
    /// directory. With it, each camera's settings are the top level's with
    /// its own over them (flags included: a flag sets the top level, which a
    /// camera's own value overrides), `camera` its key unless it names
    /// itself, and `<dataDir>/cameras/NAME` its data directory (templates,
    /// people, events, recordings). The server's settings are not copied into
    /// a camera: the token, TLS files, encoders, recording and MQTT stay the
    /// server's (`server`).
    public func cameraSettings() throws -> [ConfiguredCamera] {
        guard !cameras.isEmpty else { return [topCamera] }
        var seen = Set<String>()
        return try cameras.map { named in
            if let problem = Self.cameraNameProblem(named.name) { throw ConfigError.invalid("cameras: \(problem)") }
            guard seen.insert(named.name.lowercased()).inserted else {
                throw ConfigError.invalid("two cameras are named '\(named.name)' (names are compared ignoring case)")
            }
            // Its name (its key unless it names itself), then what it sets over the top level's camera settings.
            var settings = own
            settings.camera = named.name
            for setting in named.overrides { setting.apply(to: &settings) }
            return ConfiguredCamera(routeName: named.name,
                                    dataDir: (server.dataDir as NSString).appendingPathComponent("cameras/\(named.name)"),
                                    settings: settings)
        }
    }

    /// The top level's camera: its settings, named `cameraName`, on the data directory.
    public var topCamera: ConfiguredCamera {
        ConfiguredCamera(routeName: cameraName, dataDir: server.dataDir, settings: own)
    }

    /// The camera name events and topics use: `camera`, else the host name
    /// (up to its first dot) with anything but letters, digits, '-' and '_' as '-'.
    public var cameraName: String { own.camera ?? Self.hostCameraName() }

    public static func hostCameraName(_ host: String = ProcessInfo.processInfo.hostName) -> String {
        let short = host.split(separator: ".").first.map(String.init) ?? ""
        let cleaned = String(short.prefix(64).map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") ? $0 : "-" })
        return cleaned.isEmpty ? "sightline" : cleaned
    }

    /// 1-64 ASCII letters, digits, '-' or '_' (safe in topics, file names and
    /// Home Assistant ids), and none of `reservedCameraNames`.
    public static func isValidCameraName(_ name: String) -> Bool {
        cameraNameProblem(name) == nil
    }

    /// Why `name` cannot name a camera (in routes, events and topics), or nil.
    /// Names are compared ignoring case everywhere (`CameraRoster.key`), reserved ones too.
    public static func cameraNameProblem(_ name: String) -> String? {
        guard (1...64).contains(name.count),
              name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
            return "camera names are 1-64 letters, digits, '-' or '_', got '\(name)'"
        }
        guard !reservedCameraNames.contains(name.lowercased()) else {
            return "'\(name)' is reserved (a path the server answers, an MQTT topic of its own, or a Windows device name); "
                + "choose another camera name. Reserved, in any case: " + reservedCameraNames.sorted().joined(separator: ", ")
        }
        return nil
    }

    /// Names a camera may not have (lower case; compared ignoring case): the
    /// first path segments the server routes (`/api`, `/cam`, `/ws`, `/metrics`,
    /// `/healthz`, `/snapshot.jpg`, `/stream.mjpg`, `/index.html`), the server's own
    /// MQTT topics beside `<prefix>/<camera>/` (`available`, `events`, `stats`),
    /// and the device names Windows keeps in every folder (a camera's data
    /// directory copied there, or served by Samba).
    public static let reservedCameraNames: Set<String> = {
        var names: Set<String> = ["api", "cam", "ws", "metrics", "healthz", "snapshot", "stream", "index",
                                  "available", "events", "stats",
                                  "con", "prn", "aux", "nul"]
        for n in 0...9 { names.insert("com\(n)"); names.insert("lpt\(n)") }
        return names
    }()

    /// Whether `host` is a loopback address or name.
    public static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }


    /// Applies a config file's values over the current ones (each already
    /// read and type-checked against `SettingsCatalog`), and its cameras.
    public mutating func apply(_ config: SightlineConfig) throws {
        for setting in config.settings { setting.apply(to: &self) }
        if let named = config.cameras {
            cameras = named.map { NamedCamera(name: $0.name, overrides: $0.settings) }
        }
    }

    /// Checks each setting's rule (`SettingsCatalog`: "KEY must be ..., got
    /// VALUE"), then what holds between settings.
    /// Checks the server's settings with `camera`'s as the camera settings.
    public func validate(_ camera: ConfiguredCamera) throws {
        var whole = ServeSettings(server: server, own: camera.settings)
        whole.cameras = []
        try whole.validate()
    }

    public func validate() throws {
        for definition in SettingsCatalog.all {
            if let problem = definition.problem(in: self) { throw ConfigError.invalid(problem) }
        }
        guard own.faceIdleRate <= own.faceMaxRate else {
            throw ConfigError.invalid("faces.idleRate must be more than 0 and at most faces.maxRate, got \(own.faceIdleRate)")
        }
        guard own.events.updateSeconds >= own.events.minUpdateSeconds else {
            throw ConfigError.invalid("events.minUpdateSeconds must be at least 0.1 and events.updateSeconds between it and 3600")
        }
        guard (server.tlsCert == nil) == (server.tlsKey == nil) else {
            throw ConfigError.invalid("tls needs both a certificate and a key (--tls-cert and --tls-key)")
        }
        do { _ = try TrustedProxies(server.trustedProxies) } catch { throw ConfigError.invalid("\(error)") }
        guard server.debugStageDelayMs >= 0 else { throw ConfigError.invalid("--debug-stage-delay-ms must be >= 0") }
        _ = try SourceSpec.parse(own.source)
        for offered in own.offeredSources { _ = try SourceSpec.parse(offered) }
        try checkNotSelf()
        for target in own.publish { _ = try PublishTarget.parse(target, environment: ProcessInfo.processInfo.environment) }
        if !own.publish.isEmpty && !server.video.h264Enabled {
            throw ConfigError.invalid("publish needs H.264: video.h264 is false")
        }
        if let camera = own.camera, let problem = Self.cameraNameProblem(camera) {
            throw ConfigError.invalid("camera (its name in events and MQTT): \(problem)")
        }
        if let options = server.mqtt.options(camera: cameraName) { try options.validate() }
    }
}
