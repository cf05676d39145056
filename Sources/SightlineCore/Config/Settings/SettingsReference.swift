import Foundation
import SightlineSupport

/// The config reference: `SettingsCatalog` as a markdown table (key, default,
/// whether a camera may set it, flag, what values it accepts, what it does), which
/// docs/configuration.md holds between `begin` and `end` (`make docs`
/// rewrites it: `sightline config-reference --update docs/configuration.md`).
public enum SettingsReference {
    public static let begin = "<!-- settings:begin -->"
    public static let end = "<!-- settings:end -->"

    /// The table, one row per setting in the catalog's order, then `cameras`.
    public static func table() -> String {
        var lines = ["| key | default | camera | flag | accepts | what |", "| --- | --- | --- | --- | --- | --- |"]
        for definition in SettingsCatalog.all {
            let shown = definition.defaultText.map { "`\($0)`" } ?? "unset"
            let flag = definition.flag.map { "`--\($0)`" + (definition.flagUse == .adds ? " (repeatable)" : "") } ?? ""
            lines.append("| `\(definition.key)` | \(cell(shown)) | \(definition.scope == .camera ? "yes" : "") | \(flag) | "
                         + cell(definition.ruleWords ?? "") + " | " + cell(definition.doc) + " |")
        }
        lines.append("| `cameras` | unset |  |  |  | \(cell(SettingsCatalog.camerasDoc)) |")
        return lines.joined(separator: "\n") + "\n"
    }

    /// The block a document holds: the markers with the table between them.
    public static func block() -> String {
        begin + "\n" + table() + end
    }

    /// `document` with its block replaced by the current one; throws when it has no block.
    public static func updating(_ document: String) throws -> String {
        guard let start = document.range(of: begin),
              let stop = document.range(of: end, range: start.upperBound..<document.endIndex) else {
            throw ConfigError.invalid("no \(begin) ... \(end) block to update")
        }
        return document.replacingCharacters(in: start.lowerBound..<stop.upperBound, with: block())
    }

    /// The block as `document` has it, or nil.
    public static func current(in document: String) -> String? {
        guard let start = document.range(of: begin),
              let stop = document.range(of: end, range: start.upperBound..<document.endIndex) else { return nil }
        return String(document[start.lowerBound..<stop.upperBound])
    }

    /// A table cell: pipes escaped, on one line.
    private static func cell(_ text: String) -> String {
        text.replacingOccurrences(of: "|", with: "\\|").replacingOccurrences(of: "\n", with: " ")
    }
}
