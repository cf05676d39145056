import ArgumentParser
import Foundation
import Logging
import SightlineCore
import SightlineSupport

@main
struct Sightline: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sightline",
        abstract: "A camera server that finds templates and faces and streams the annotated feed to browsers.",
        version: SightlineVersion.string,
        subcommands: [ServeCommand.self, DetectCommand.self, BenchCommand.self, TokenCommand.self, ConfigReferenceCommand.self],
        defaultSubcommand: ServeCommand.self
    )
}

/// Sets up swift-log once, writing to standard error at the given level.
enum LogSetup {
    static func bootstrap(level: String) throws -> Logger {
        guard let parsed = Logger.Level(rawValue: level.lowercased()) else {
            throw ValidationError("unknown log level '\(level)' (trace, debug, info, notice, warning, error, critical)")
        }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = parsed
            return handler
        }
        return Logger(label: "sightline")
    }
}
