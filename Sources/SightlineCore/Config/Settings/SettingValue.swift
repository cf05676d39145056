import Foundation
import Yams

/// A type a setting's YAML value (or flag) is read as: how a node becomes
/// one, what to call the type in a message, and how a value is written back
/// as YAML text (the defaults in the config reference).
public protocol SettingValue: Sendable, Equatable {
    /// "an integer", "a number", ...: the words of a wrong-type message.
    static var typeName: String { get }
    /// The value of a YAML node, or nil when the node is not of this type.
    init?(node: Node)
    /// The value as it would be written in the config file.
    var yamlText: String { get }
    /// Several values given after one another (a repeatable flag that adds
    /// to the config's list); nil: the last one replaces the others.
    static func appending(_ base: Self, _ more: Self) -> Self?
}

extension SettingValue {
    public static func appending(_ base: Self, _ more: Self) -> Self? { nil }
}

extension Bool: SettingValue {
    public static var typeName: String { "true or false" }
    public init?(node: Node) {
        guard let value = node.bool else { return nil }
        self = value
    }
    public var yamlText: String { self ? "true" : "false" }
}

extension Int: SettingValue {
    public static var typeName: String { "an integer" }
    public init?(node: Node) {
        guard let value = node.int else { return nil }
        self = value
    }
    public var yamlText: String { String(self) }
}

extension Double: SettingValue {
    public static var typeName: String { "a number" }
    public init?(node: Node) {
        guard let value = node.float ?? node.int.map(Double.init), value.isFinite else { return nil }
        self = value
    }
    public var yamlText: String {
        self == rounded() && abs(self) < 1e15 ? String(Int(self)) : String(self)
    }
}

extension String: SettingValue {
    public static var typeName: String { "a string" }
    /// Any scalar: `host: 10.0.0.2` and `camera: 7` are text too.
    public init?(node: Node) {
        guard let scalar = node.scalar else { return nil }
        self = scalar.string
    }
    public var yamlText: String { isEmpty ? "\"\"" : self }
}

extension Array: SettingValue where Element: SettingValue {
    public static var typeName: String { "a list of " + Element.typeName.replacingOccurrences(of: "an ", with: "").replacingOccurrences(of: "a ", with: "") + "s" }
    public init?(node: Node) {
        guard let sequence = node.sequence else { return nil }
        var values: [Element] = []
        for item in sequence {
            guard let value = Element(node: item) else { return nil }
            values.append(value)
        }
        self = values
    }
    public var yamlText: String { "[" + map(\.yamlText).joined(separator: ", ") + "]" }
    public static func appending(_ base: Self, _ more: Self) -> Self? { base + more }
}

extension Node {
    /// `key:` or `key: ~` (null) in the file: the setting keeps what it had. A
    /// quoted `""` is the empty string, not null.
    var isNull: Bool {
        guard let scalar, scalar.style == .plain || scalar.style == .any else { return false }
        return null != nil
    }

    /// A plain or quoted string scalar (not a number, a boolean or null).
    var isText: Bool {
        guard let scalar else { return false }
        if scalar.style != .plain && scalar.style != .any { return true }
        return null == nil && bool == nil && int == nil && float == nil
    }
}
