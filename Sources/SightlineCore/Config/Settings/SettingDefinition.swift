import Foundation
import SightlineSupport
import Yams

/// One setting: its key, type, default, scope, flag, doc line and rule, and
/// how a YAML value (or its flag) sets it. `SettingsCatalog.all` lists every
/// one; reading the config file, applying flags, range checks and the
/// config reference (`sightline config-reference`) all come from there.
public struct SettingDefinition: Sendable {
    /// Who may set it: the server only (the top level), or each camera too
    /// (under `cameras:`; the top level's value is every camera's default).
    public enum Scope: String, Sendable {
        case server, camera
    }

    /// What a flag does with its setting.
    public enum FlagUse: Sendable {
        /// The flag's value replaces the setting's.
        case replaces
        /// A repeatable flag: its values are added to the config's list.
        case adds
        /// A switch (`--no-faces`): given, the setting is false.
        case turnsOff
    }

    /// What reading a value gives: a value to set, nothing to do (an empty
    /// string meaning unset), or a refusal (what follows "KEY must be").
    public enum Reading<Value: Sendable>: Sendable {
        case set(Value)
        case keep
        case refuse(String)
    }

    /// The dotted YAML key: `faces.maxRate`; `camera`, `publish` at the top level.
    public let key: String
    /// The YAML type, as a message words it ("an integer").
    public let typeName: String
    public let scope: Scope
    /// The long flag without its dashes (`max-faces`), if the setting has one.
    public let flag: String?
    public let flagUse: FlagUse
    /// One line for the config reference and the flag's help.
    public let doc: String
    /// What the rule accepts, in words ("1-100"), if it has one.
    public let ruleWords: String?
    private let read: @Sendable (Node, String) throws -> SettingAssignment?
    private let applyTexts: @Sendable (inout ServeSettings, [String]) throws -> Void
    private let show: @Sendable (ServeSettings) -> String?
    private let check: @Sendable (ServeSettings) -> String?

    /// A server setting stored as it is written (`WritableKeyPath` into `ServerSettings`).
    public static func value<V: SettingValue>(_ key: String, _ path: WritableKeyPath<ServerSettings, V> & Sendable,
                                              flag: String? = nil, use flagUse: FlagUse = .replaces,
                                              rule: SettingRule<V>? = nil, _ doc: String) -> SettingDefinition {
        mapped(key, path, flag: flag, use: flagUse, rule: rule, read: { .set($0) }, show: { $0 }, doc)
    }

    /// A camera setting stored as it is written (`WritableKeyPath` into `CameraSettings`).
    public static func value<V: SettingValue>(_ key: String, _ path: WritableKeyPath<CameraSettings, V> & Sendable,
                                              flag: String? = nil, use flagUse: FlagUse = .replaces,
                                              rule: SettingRule<V>? = nil, _ doc: String) -> SettingDefinition {
        mapped(key, path, flag: flag, use: flagUse, rule: rule, read: { .set($0) }, show: { $0 }, doc)
    }

    /// A server setting stored in another form than it is written: `read`
    /// turns the written value into the stored one (or keeps the setting as
    /// it is, or refuses), `show` the stored one back (nil: unset).
    public static func mapped<V: SettingValue, T: Sendable>(
        _ key: String, _ path: WritableKeyPath<ServerSettings, T> & Sendable,
        flag: String? = nil, use flagUse: FlagUse = .replaces, rule: SettingRule<V>? = nil,
        read: @escaping @Sendable (V) -> Reading<T>, show: @escaping @Sendable (T) -> V?, _ doc: String
    ) -> SettingDefinition {
        make(key, .server, get: { $0.server[keyPath: path] }, set: { $0.server[keyPath: path] = $1 }, setCamera: nil,
             flag: flag, use: flagUse, rule: rule, read: read, show: show, doc)
    }

    /// A camera setting stored in another form than it is written (as the server's `mapped`).
    public static func mapped<V: SettingValue, T: Sendable>(
        _ key: String, _ path: WritableKeyPath<CameraSettings, T> & Sendable,
        flag: String? = nil, use flagUse: FlagUse = .replaces, rule: SettingRule<V>? = nil,
        read: @escaping @Sendable (V) -> Reading<T>, show: @escaping @Sendable (T) -> V?, _ doc: String
    ) -> SettingDefinition {
        make(key, .camera, get: { $0.own[keyPath: path] }, set: { $0.own[keyPath: path] = $1 },
             setCamera: { $0[keyPath: path] = $1 }, flag: flag, use: flagUse, rule: rule, read: read, show: show, doc)
    }

    private static func make<V: SettingValue, T: Sendable>(
        _ key: String, _ scope: Scope, get: @escaping @Sendable (ServeSettings) -> T,
        set: @escaping @Sendable (inout ServeSettings, T) -> Void, setCamera: (@Sendable (inout CameraSettings, T) -> Void)?,
        flag: String?, use flagUse: FlagUse, rule: SettingRule<V>?,
        read: @escaping @Sendable (V) -> Reading<T>, show: @escaping @Sendable (T) -> V?, _ doc: String
    ) -> SettingDefinition {
        let decode: @Sendable (Node, String) throws -> Reading<T> = { node, place in
            guard let written = V(node: node) else {
                throw ConfigError.invalid("\(place) must be \(V.typeName), got \(Self.describe(node))")
            }
            if case .refuse(let words) = read(written) {
                throw ConfigError.invalid("\(place) must be \(words), got \(written.yamlText)")
            }
            return read(written)
        }
        return SettingDefinition(
            key: key, typeName: V.typeName, scope: scope, flag: flag, flagUse: flagUse, doc: doc, ruleWords: rule?.words,
            read: { node, place in
                guard case .set(let value) = try decode(node, place) else { return nil }
                var onCamera: (@Sendable (inout CameraSettings) -> Void)?
                if let setCamera {
                    onCamera = { (camera: inout CameraSettings) in setCamera(&camera, value) }
                }
                return SettingAssignment(key: key, scope: scope, set: { (settings: inout ServeSettings) in set(&settings, value) },
                                         setCamera: onCamera)
            },
            applyTexts: { settings, texts in
                let place = "--\(flag ?? key)"
                let node = flagUse == .turnsOff ? Node("false")
                    : V(node: Node(texts.last ?? "")) != nil ? Node(texts.last ?? "") : Node(texts.map { Node($0) })
                guard case .set(var value) = try decode(node, place) else { return }
                if flagUse == .adds, let old = show(get(settings)), let new = show(value),
                   let both = V.appending(old, new), case .set(let joined) = read(both) {
                    value = joined
                }
                set(&settings, value)
            },
            show: { settings in show(get(settings))?.yamlText },
            check: { settings in
                guard let rule, let shown = show(get(settings)), !rule.accepts(shown) else { return nil }
                return "\(key) must be \(rule.words), got \(shown.yamlText)"
            })
    }

    /// Reads a YAML value for this setting; `place` is the key as the file
    /// spells it (`cameras.yard.faces.maxRate`). Nil: nothing to set (an
    /// empty string meaning unset). Throws, naming `place`, when the value is
    /// not of the setting's type or is refused.
    public func assignment(from node: Node, place: String) throws -> SettingAssignment? {
        try read(node, place)
    }

    /// Sets this setting from its flag's values (the flag given once or more).
    public func applyFlag(_ texts: [String], to settings: inout ServeSettings) throws {
        try applyTexts(&settings, texts)
    }

    /// The setting's value in `settings` as YAML text; nil while unset.
    public func yamlText(in settings: ServeSettings) -> String? {
        show(settings)
    }

    /// The default: the value in a fresh `ServeSettings` (so it cannot drift).
    public var defaultText: String? {
        show(ServeSettings())
    }

    /// "KEY must be RULE, got VALUE" when `settings` break this setting's rule; else nil.
    public func problem(in settings: ServeSettings) -> String? {
        check(settings)
    }

    /// The YAML section it is in (`faces` for `faces.maxRate`; "" at the top level).
    public var section: String {
        key.split(separator: ".").dropLast().joined(separator: ".")
    }

    /// The value of a node as a message quotes it.
    static func describe(_ node: Node) -> String {
        switch node {
        case .scalar(let scalar): return "'\(scalar.string)'"
        case .sequence: return "a list"
        case .mapping: return "a mapping"
        }
    }
}
