import Foundation
import Glibc
import SightlineHTTP
import SightlinePipeline
import SightlineSupport

/// What admins changed about the cameras at runtime, kept in
/// `<data-dir>/cameras.json` (written whole with `AtomicFile`) and laid over
/// the config's cameras at every start (`resolve`):
///
/// - `added`: cameras added with `POST /api/cameras`, in the order added,
///   after the config's.
/// - `removed`: config cameras removed with `DELETE /api/cameras/NAME`
///   (cameras added at runtime are simply dropped from `added`).
/// - `sources`: config cameras whose source was switched (`POST
///   /api/cameras/NAME/source`), with the source the config gave them then;
///   an added camera's switch changes its own `source`.
///
/// The config file stays the authority for what it says: a camera it names
/// is never replaced by an added one of the same name (the added entry is
/// dropped, logged); a switched source holds only while the config still
/// says what it said when the source was switched (once the config's source
/// changes, the config's wins); removed names the config no longer has are
/// forgotten. The first camera is always one of the config's: if every one
/// was removed (the config changed since), its first is kept.
///
/// A pure value: the caller (`CameraRegistry`) serializes changes and saving.
public struct CameraRoster: Codable, Sendable, Equatable {
    public struct Added: Codable, Sendable, Equatable {
        /// Its name in routes (`/cam/NAME/`) and its data directory.
        public var name: String
        /// Its source spec (as `--source`).
        public var source: String
        /// Its name in events and MQTT topics (nil: `name`).
        public var camera: String?
        /// Face detection on or off (nil: the top level's setting).
        public var faces: Bool?

        public init(name: String, source: String, camera: String? = nil, faces: Bool? = nil) {
            self.name = name
            self.source = source
            self.camera = camera
            self.faces = faces
        }
    }

    public struct Switched: Codable, Sendable, Equatable {
        public var source: String
        /// The config's source for the camera when it was switched.
        public var configSource: String

        public init(source: String, configSource: String) {
            self.source = source
            self.configSource = configSource
        }
    }

    public var version = 1
    public var added: [Added] = []
    /// Names of config cameras removed at runtime.
    public var removed: [String] = []
    /// Config cameras' switched sources, by name.
    public var sources: [String: Switched] = [:]

    public init(added: [Added] = [], removed: [String] = [], sources: [String: Switched] = [:]) {
        self.added = added
        self.removed = removed
        self.sources = sources
    }

    public static let fileName = "cameras.json"

    public static func path(dataDir: String) -> String {
        (dataDir as NSString).appendingPathComponent(fileName)
    }

    // MARK: - The file

    /// The roster in `dataDir`: empty without a file. A file that cannot be
    /// read as one is moved aside to `cameras.json.malformed-<unix time>` (so
    /// nothing is lost and the next save does not overwrite it) and the
    /// roster is empty, with a warning saying so; the config's cameras start.
    public static func load(dataDir: String, now: Date = Date()) -> (roster: CameraRoster, warning: String?) {
        let path = path(dataDir: dataDir)
        guard let data = FileManager.default.contents(atPath: path) else {
            if access(path, F_OK) == 0 {
                return (CameraRoster(), "cannot read \(path) (\(String(cString: strerror(errno)))); "
                        + "starting with the config's cameras, without the changes made at runtime")
            }
            return (CameraRoster(), nil)
        }
        do {
            let roster = try JSONDecoder().decode(CameraRoster.self, from: data)
            guard roster.version == 1 else { throw ConfigError.invalid("version \(roster.version) is not 1") }
            return (roster, nil)
        } catch {
            let aside = path + ".malformed-\(Int(now.timeIntervalSince1970))"
            let moved = rename(path, aside) == 0
            let why = (error as? ConfigError).map { "\($0)" } ?? "not the JSON it should be"
            return (CameraRoster(), "\(path) is malformed (\(why)); "
                    + (moved ? "moved it to \(aside) and " : "could not move it aside, ")
                    + "starting with the config's cameras, without the changes made at runtime")
        }
    }

    /// Writes the roster whole (a `StorageError` on failure; the old file stays).
    public func save(dataDir: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try AtomicFile.write(try encoder.encode(self), to: Self.path(dataDir: dataDir), permissions: 0o600)
    }

    // MARK: - Over the config

    public struct Resolved: Sendable {
        /// Each camera's settings, the config's (less the removed, with
        /// switched sources) first, then the added ones.
        public var cameras: [ConfiguredCamera]
        /// The roster without what no longer applies (save it when it differs).
        public var roster: CameraRoster
        /// What was set aside and why, for the log.
        public var notes: [String]
    }

    /// `top`: the server's settings (config and flags); its cameras are
    /// `top.cameraSettings()`. Throws for the config's own errors only.
    public func resolve(top: ServeSettings) throws -> Resolved {
        let configured = try top.cameraSettings()
        var kept = self
        var notes: [String] = []
        let configNames = Set(configured.map { Self.key($0.routeName) })
        kept.removed = removed.filter { name in
            guard configNames.contains(Self.key(name)) else {
                notes.append("camera '\(name)' was removed at runtime and is no longer in the config; forgetting it")
                return false
            }
            return true
        }
        var cameras: [ConfiguredCamera] = []
        for var own in configured {
            let name = own.routeName
            if kept.removed.contains(where: { Self.key($0) == Self.key(name) }) { continue }
            if let switched = kept.sources[name] {
                if switched.configSource == own.source {
                    own.source = switched.source
                } else {
                    notes.append("camera '\(name)': the config's source changed since it was switched at runtime; "
                                 + "using the config's (\(SourceSpec.logForm(own.source)))")
                    kept.sources[name] = nil
                }
            }
            cameras.append(own)
        }
        for name in kept.sources.keys where !configured.contains(where: { ($0.routeName) == name })
            || kept.removed.contains(where: { Self.key($0) == Self.key(name) }) {
            kept.sources[name] = nil
        }
        kept.added = []
        for entry in added {
            if configNames.contains(Self.key(entry.name)) {
                notes.append("camera '\(entry.name)' added at runtime is now in the config; the config's settings win")
                continue
            }
            if kept.added.contains(where: { Self.key($0.name) == Self.key(entry.name) }) {
                notes.append("camera '\(entry.name)' is in \(Self.fileName) twice; keeping the first")
                continue
            }
            do {
                cameras.append(try top.addedCameraSettings(entry))
                kept.added.append(entry)
            } catch {
                notes.append("camera '\(entry.name)' added at runtime cannot be made (\(error)); leaving it out")
                kept.added.append(entry)
            }
        }
        // The first camera (the unprefixed routes') is always one of the config's.
        if !cameras.contains(where: { configNames.contains(Self.key($0.routeName)) && !kept.isAdded($0.routeName) }),
           let first = configured.first {
            let name = first.routeName
            notes.append("every camera of the config was removed at runtime; keeping the first, '\(name)'")
            kept.removed.removeAll { Self.key($0) == Self.key(name) }
            cameras.insert(first, at: 0)
        }
        return Resolved(cameras: cameras, roster: kept, notes: notes)
    }

    // MARK: - Changes (the caller saves)

    /// Camera `entry` added. A config camera removed before comes back with
    /// the config's settings and `entry.source` as a switched source
    /// (`configSource`: its source in the config); any other is added.
    public mutating func add(_ entry: Added, configSource: String?) {
        if let configSource, let index = removed.firstIndex(where: { Self.key($0) == Self.key(entry.name) }) {
            let name = removed.remove(at: index)
            sources[name] = entry.source == configSource ? nil : Switched(source: entry.source, configSource: configSource)
        } else {
            // One that could not be made at the last start (still here) is replaced.
            added.removeAll { Self.key($0.name) == Self.key(entry.name) }
            added.append(entry)
        }
    }

    /// Camera `name` removed: an added one is forgotten, a config one remembered as removed.
    public mutating func remove(_ name: String) {
        if let index = added.firstIndex(where: { Self.key($0.name) == Self.key(name) }) {
            added.remove(at: index)
        } else if !removed.contains(where: { Self.key($0) == Self.key(name) }) {
            removed.append(name)
            sources[name] = nil
        }
    }

    /// Camera `name`'s source switched to `spec`; `configSource`: its source
    /// in the config (nil for a camera added at runtime).
    public mutating func switchSource(of name: String, to spec: String, configSource: String?) {
        if let index = added.firstIndex(where: { Self.key($0.name) == Self.key(name) }) {
            added[index].source = spec
        } else if let configSource {
            sources[name] = spec == configSource ? nil : Switched(source: spec, configSource: configSource)
        }
    }

    /// Whether camera `name` is one added at runtime.
    public func isAdded(_ name: String) -> Bool {
        added.contains { Self.key($0.name) == Self.key(name) }
    }

    /// Names are compared ignoring case (as in the config).
    static func key(_ name: String) -> String { name.lowercased() }
}

extension ServeSettings {
    /// The settings of a camera added at runtime: these (the top level's)
    /// with its source, name and faces over them, on `<dataDir>/cameras/NAME`,
    /// with an MQTT connection of its own (as a camera of several). Checks
    /// the name, the source spec and the rest as at start.
    public func addedCameraSettings(_ entry: CameraRoster.Added) throws -> ConfiguredCamera {
        if let problem = Self.cameraNameProblem(entry.name) { throw ConfigError.invalid(problem) }
        if let camera = entry.camera, let problem = Self.cameraNameProblem(camera) {
            throw ConfigError.invalid("camera (its name in events and MQTT): \(problem)")
        }
        _ = try SourceSpec.parse(entry.source)
        var settings = own
        settings.source = entry.source
        if let faces = entry.faces { settings.facesEnabled = faces }
        settings.camera = entry.camera ?? entry.name
        let camera = ConfiguredCamera(routeName: entry.name,
                                      dataDir: (server.dataDir as NSString).appendingPathComponent("cameras/\(entry.name)"),
                                      settings: settings)
        // The server's MQTT settings: the camera joins the server's one connection.
        try validate(camera)
        return camera
    }
}
