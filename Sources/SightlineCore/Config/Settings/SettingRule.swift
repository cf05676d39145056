import Foundation

/// What values a setting accepts, in words and as a test. A setting whose
/// value fails its rule is refused with "KEY must be WORDS, got VALUE",
/// written by `SettingDefinition`, so every range message names its key the
/// same way.
public struct SettingRule<Value: SettingValue>: Sendable {
    /// What follows "must be" in a message: "1-100", "positive", ...
    public let words: String
    public let accepts: @Sendable (Value) -> Bool

    public init(_ words: String, accepts: @escaping @Sendable (Value) -> Bool) {
        self.words = words
        self.accepts = accepts
    }
}

extension SettingRule where Value: Comparable {
    /// lower-upper, both included; `note` follows in parentheses.
    public static func within(_ range: ClosedRange<Value>, _ note: String? = nil) -> Self {
        Self("\(range.lowerBound.yamlText)-\(range.upperBound.yamlText)" + (note.map { " (\($0))" } ?? "")) { range.contains($0) }
    }

    /// More than `lower`, at most `upper`.
    public static func above(_ lower: Value, atMost upper: Value) -> Self {
        Self("more than \(lower.yamlText) and at most \(upper.yamlText)") { $0 > lower && $0 <= upper }
    }

    /// More than `lower` and less than `upper`.
    public static func between(_ lower: Value, _ upper: Value) -> Self {
        Self("more than \(lower.yamlText) and less than \(upper.yamlText)") { $0 > lower && $0 < upper }
    }

    public static func atLeast(_ lower: Value) -> Self {
        Self("at least \(lower.yamlText)") { $0 >= lower }
    }
}

extension SettingRule where Value: Comparable & ExpressibleByIntegerLiteral {
    /// 0 (meaning `zero`) or within `range`.
    public static func zeroOr(_ range: ClosedRange<Value>, _ zero: String) -> Self {
        Self("0 (\(zero)) or \(range.lowerBound.yamlText)-\(range.upperBound.yamlText)") { $0 == 0 || range.contains($0) }
    }

    public static var positive: Self { Self("positive") { $0 > 0 } }
}

extension SettingRule {
    /// One of `values`.
    public static func oneOf(_ values: [Value]) -> Self {
        Self("one of " + values.map(\.yamlText).joined(separator: ", ")) { values.contains($0) }
    }
}
