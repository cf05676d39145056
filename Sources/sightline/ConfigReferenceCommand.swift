import ArgumentParser
import Foundation
import SightlineCore

/// Prints the config reference (every setting of `SettingsCatalog`) as a
/// markdown table, or rewrites it in a document (`make docs`).
struct ConfigReferenceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config-reference",
        abstract: "Print every setting (key, default, whether a camera may set it, flag, what it does) as a markdown table."
    )

    @Option(help: "Rewrite the settings block of this markdown file (docs/configuration.md) instead of printing it.")
    var update: String?

    func run() throws {
        guard let update else {
            print(SettingsReference.block())
            return
        }
        let document = try String(contentsOfFile: update, encoding: .utf8)
        let updated = try SettingsReference.updating(document)
        if updated != document {
            try updated.write(toFile: update, atomically: true, encoding: .utf8)
        }
    }
}
