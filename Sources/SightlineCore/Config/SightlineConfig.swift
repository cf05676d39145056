import Foundation
import SightlineSupport
import Yams

/// The configuration file (config/sightline.yaml), as written by people,
/// read through Yams into a node tree and walked against `SettingsCatalog`:
/// each value is checked for its setting's type as it is read, and an
/// unknown key or a wrong type is refused with the key's name (and the
/// nearest known key). What is missing keeps its default.
public struct SightlineConfig: Sendable {
    /// One camera of `cameras:`: its name (the key) and what it sets.
    public struct Camera: Sendable {
        public var name: String
        public var settings: [SettingAssignment]

        public init(name: String, settings: [SettingAssignment] = []) {
            self.name = name
            self.settings = settings
        }
    }

    /// The top level's values, in the file's order.
    public var settings: [SettingAssignment] = []
    /// `cameras:` in the file's order (the first is the camera of the unprefixed routes); nil: no `cameras:`.
    public var cameras: [Camera]?

    public init() {}

    /// The names of `cameras:` in the file's order.
    public var cameraOrder: [String] { cameras?.map(\.name) ?? [] }

    /// The keys the top level sets (`faces.maxRate`, ...), in the file's order.
    public var keys: [String] { settings.map(\.key) }

    /// Parses YAML text; `origin` names the file in errors.
    public static func parse(_ text: String, origin: String) throws -> SightlineConfig {
        let tree: Node?
        do {
            tree = try Yams.compose(yaml: text)
        } catch {
            throw ConfigError.malformed(origin, "\(error)")
        }
        var config = SightlineConfig()
        guard let tree, !tree.isNull else { return config }
        guard let root = tree.mapping else {
            throw ConfigError.malformed(origin, "the top level must be a mapping of keys to values")
        }
        do {
            for (keyNode, value) in root {
                let key = keyNode.string ?? ""
                if key == "cameras" {
                    config.cameras = try readCameras(value)
                } else {
                    try read(key, value, section: "", place: "", scope: .server, into: &config.settings)
                }
            }
        } catch let error as ConfigError {
            if case .invalid(let why) = error { throw ConfigError.malformed(origin, why) }
            throw error
        }
        return config
    }

    public static func load(path: String) throws -> SightlineConfig {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigError.unreadable(path)
        }
        return try parse(String(decoding: data, as: UTF8.self), origin: path)
    }

    /// `cameras:`: a mapping of names to what each sets (a mapping, its
    /// source spec alone, or nothing), in the file's order.
    private static func readCameras(_ node: Node) throws -> [Camera]? {
        if node.isNull { return nil }
        guard let map = node.mapping, !map.isEmpty else {
            throw ConfigError.invalid("'cameras' must be a mapping of camera names to their settings")
        }
        var cameras: [Camera] = []
        for (nameNode, value) in map {
            let name = nameNode.string ?? ""
            var camera = Camera(name: name)
            if value.isNull {
                // A camera with nothing of its own.
            } else if value.isText {
                try read("source", value, section: "", place: "cameras.\(name).", scope: .camera, into: &camera.settings)
            } else if let settings = value.mapping {
                for (keyNode, sub) in settings {
                    try read(keyNode.string ?? "", sub, section: "", place: "cameras.\(name).", scope: .camera,
                             into: &camera.settings)
                }
            } else {
                throw ConfigError.invalid("cameras.\(name) must be a mapping, or a source spec string")
            }
            cameras.append(camera)
        }
        return cameras
    }

    /// Reads `key` of `section` (a setting, or a section of them) into `settings`.
    /// `place` prefixes the key in messages (`cameras.yard.`); `scope`
    /// `.camera` refuses the server's settings.
    private static func read(_ key: String, _ node: Node, section: String, place: String, scope: SettingDefinition.Scope,
                             into settings: inout [SettingAssignment]) throws {
        let dotted = section.isEmpty ? key : "\(section).\(key)"
        if let definition = SettingsCatalog.definition(dotted), scope == .server || definition.scope == .camera {
            if node.isNull { return }
            if let assignment = try definition.assignment(from: node, place: place + dotted) { settings.append(assignment) }
            return
        }
        if SettingsCatalog.sections.contains(dotted), scope == .server || allowsCamera(section: dotted) {
            if node.isNull { return }
            if dotted == "source", node.isText {
                // The spec alone, as Frigate and go2rtc users write it.
                try read("spec", node, section: "source", place: place, scope: scope, into: &settings)
                return
            }
            guard let map = node.mapping else {
                throw ConfigError.invalid(dotted == "source" ? "'\(place)source' must be a spec string or a mapping"
                                          : "'\(place)\(dotted)' must be a mapping")
            }
            for (keyNode, sub) in map {
                try read(keyNode.string ?? "", sub, section: dotted, place: place, scope: scope, into: &settings)
            }
            return
        }
        throw ConfigError.invalid(unknownKey(key, section: section, place: place, scope: scope))
    }

    /// Whether a camera may set something in `section`.
    private static func allowsCamera(section: String) -> Bool {
        SettingsCatalog.all.contains { $0.scope == .camera && $0.key.hasPrefix(section + ".") }
    }

    /// "unknown key 'prot' in 'server' (did you mean 'port'?); known: ..."
    private static func unknownKey(_ key: String, section: String, place: String, scope: SettingDefinition.Scope) -> String {
        let prefix = section.isEmpty ? "" : section + "."
        var known = Set<String>()
        for definition in SettingsCatalog.all where definition.key.hasPrefix(prefix) && (scope == .server || definition.scope == .camera) {
            known.insert(String(definition.key.dropFirst(prefix.count).split(separator: ".").first ?? ""))
        }
        if section.isEmpty && scope == .server { known.insert("cameras") }
        let where_ = place.isEmpty && section.isEmpty ? "the top level"
            : section.isEmpty ? String(place.dropLast()) : "'\(place)\(section)'"
        let nearest = known.min { editDistance($0.lowercased(), key.lowercased()) < editDistance($1.lowercased(), key.lowercased()) }
        let hint = nearest.flatMap { editDistance($0.lowercased(), key.lowercased()) <= max(2, key.count / 3) ? " (did you mean '\($0)'?)" : nil } ?? ""
        let serverOnly = scope == .camera && SettingsCatalog.definition(prefix + key).map { $0.scope == .server } == true
            || scope == .camera && section.isEmpty && SettingsCatalog.sections.contains(key)
        let why = serverOnly ? " ('\(prefix + key)' is the server's: a camera cannot set it)" : ""
        return "unknown key '\(key)' in \(where_)\(why)\(hint); known: " + known.sorted().joined(separator: ", ")
    }

    /// Levenshtein distance, for the nearest known key.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
