import ArgumentParser
import Foundation
import SightlineCore
import SightlineVision
import SightlinePipeline
import SightlineHTTP

/// `sightline token add|list|revoke`: the named tokens in the data directory.
struct TokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Manage the named access tokens (viewer or admin) kept hashed in the data directory.",
        subcommands: [Add.self, List.self, Revoke.self]
    )

    struct Location: ParsableArguments {
        @Option(help: "Data directory (else the config's dataDir, else data).")
        var dataDir: String?

        @Option(help: "YAML config file. Default: config/sightline.yaml if present.")
        var config: String?

        func store() throws -> TokenStore {
            var directory = dataDir
            if directory == nil {
                let defaultConfig = "config/sightline.yaml"
                if let path = config ?? (FileManager.default.fileExists(atPath: defaultConfig) ? defaultConfig : nil) {
                    var settings = ServeSettings()
                    try settings.apply(SightlineConfig.load(path: path))
                    directory = settings.dataDir
                }
            }
            let path = directory ?? "data"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            return try TokenStore.open(dataDir: path).store
        }
    }

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Make a token and print it once.")
        @Argument(help: "Its name (letters, digits, . _ -).") var name: String
        @Option(help: "viewer or admin.") var role: Role = .viewer
        @OptionGroup var location: Location

        func run() throws {
            do {
                print(try location.store().add(name: name, role: role))
            } catch let error as TokenError {
                throw ValidationError(error.description)
            }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The tokens' names, roles and ages (never the tokens).")
        @OptionGroup var location: Location
        @Flag(help: "JSON lines instead of a table.") var json = false

        func run() throws {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            for token in try location.store().list() {
                if json {
                    print(String(decoding: try encoder.encode(token), as: UTF8.self))
                } else {
                    let made = token.createdAt > 0 ? ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: token.createdAt)) : "-"
                    print([token.name, token.role.rawValue, made, token.source].joined(separator: "\t"))
                }
            }
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a token; it stops working on the server's next request.")
        @Argument(help: "Its name.") var name: String
        @OptionGroup var location: Location

        func run() throws {
            do {
                guard try location.store().revoke(name: name) else { throw ValidationError("no token named '\(name)'") }
            } catch let error as TokenError {
                throw ValidationError(error.description)
            }
        }
    }
}

extension Role: ExpressibleByArgument {}
