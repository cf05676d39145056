import ArgumentParser
import Foundation
import SightlineCore
import SightlineVision
import SightlinePipeline
import SightlineHTTP

/// The settings flags `serve` and `bench` share, so `bench` measures the
/// graph `serve` would build from the same command line and config.
///
/// Each setting flag is its `SettingsCatalog` entry's: its name and help come
/// from there, and `resolveSettings` applies them in one loop over the
/// catalog's flagged entries (argument-parser needs a property per flag: the
/// property is the flag's name in camelCase, `--offer-source` `offerSource`).
struct SettingsOptions: ParsableArguments {
    @Option(help: "YAML config file (flags override it). Default: config/sightline.yaml if present.")
    var config: String?

    @Option(name: .setting("source.spec"), help: .setting("source.spec")) var source: String?
    @Option(name: .setting("server.host"), help: .setting("server.host")) var host: String?
    @Option(name: .setting("server.port"), help: .setting("server.port")) var port: Int?
    @Option(name: .setting("tls.cert"), help: .setting("tls.cert")) var tlsCert: String?
    @Option(name: .setting("tls.key"), help: .setting("tls.key")) var tlsKey: String?
    @Option(name: .setting("templates.paths"), help: .setting("templates.paths")) var template: [String] = []
    @Option(name: .setting("dataDir"), help: .setting("dataDir")) var dataDir: String?
    @Option(name: .setting("server.webRoot"), help: .setting("server.webRoot")) var webRoot: String?
    @Option(name: .setting("jpeg.quality"), help: .setting("jpeg.quality")) var quality: Int?
    @Option(name: .setting("video.jpegMaxWidth"), help: .setting("video.jpegMaxWidth")) var jpegMaxWidth: Int?
    @Option(name: .setting("server.opencvThreads"), help: .setting("server.opencvThreads")) var opencvThreads: Int?
    @Option(name: .setting("logLevel"), help: .setting("logLevel")) var logLevel: String?
    @Option(name: .setting("faces.model"), help: .setting("faces.model")) var faceModel: String?
    @Flag(name: .setting("faces.enabled"), help: .setting("faces.enabled")) var noFaces = false
    @Flag(name: .setting("events.clips"), help: .setting("events.clips")) var noClips = false
    @Option(name: .setting("analysis.size"), help: .setting("analysis.size")) var analysisSize: Int?
    @Option(name: .setting("faces.maxFaces"), help: .setting("faces.maxFaces")) var maxFaces: Int?
    @Option(name: .setting("source.offer"), help: .setting("source.offer")) var offerSource: [String] = []
    @Option(name: .setting("media"), help: .setting("media")) var mediaDir: [String] = []
    @Option(name: .setting("publish"), help: .setting("publish")) var publish: [String] = []

    @Option(help: ArgumentHelp("Test hook: every frame spends this long in the pipeline.", visibility: .hidden))
    var debugStageDelayMs: Double?

    /// Defaults, then the config file, then these flags.
    func resolveSettings() throws -> ServeSettings {
        var settings = ServeSettings()
        let defaultConfig = "config/sightline.yaml"
        let configPath = config ?? (FileManager.default.fileExists(atPath: defaultConfig) ? defaultConfig : nil)
        if let configPath {
            do {
                try settings.apply(SightlineConfig.load(path: configPath))
            } catch {
                throw ValidationError("\(error)")
            }
        }
        let configuredModel = settings.faceModel
        let given = givenFlags()
        do {
            for definition in SettingsCatalog.all {
                guard let flag = definition.flag else { continue }
                guard let texts = given[flag] else {
                    preconditionFailure("SettingsOptions has no property \(Self.propertyName(flag)) for --\(flag) (\(definition.key))")
                }
                if let texts { try definition.applyFlag(texts, to: &settings) }
            }
        } catch {
            throw ValidationError("\(error)")
        }
        if let debugStageDelayMs { settings.debugStageDelayMs = debugStageDelayMs }
        // The model: the flag, then SIGHTLINE_FACE_MODEL, then the config, then the shipped one.
        settings.faceModel = FaceDetectorFactory.resolveModelPath(flag: faceModel, environment: ProcessInfo.processInfo.environment,
                                                                  configured: configuredModel)
        do {
            try settings.validate()
        } catch {
            throw ValidationError("\(error)")
        }
        return settings
    }

    /// Each setting flag's values as given (nil: not given), by flag name.
    private func givenFlags() -> [String: [String]?] {
        var given: [String: [String]?] = [:]
        for child in Mirror(reflecting: self).children {
            guard let label = child.label, let flag = child.value as? GivenFlag else { continue }
            given[Self.flagName(String(label.drop { $0 == "_" }))] = .some(flag.givenTexts)
        }
        return given
    }

    /// `offerSource` → `offer-source`, as argument-parser names a property's flag.
    static func flagName(_ property: String) -> String {
        property.reduce(into: "") { name, character in
            if character.isUppercase { name += "-" + character.lowercased() } else { name.append(character) }
        }
    }

    /// `offer-source` → `offerSource`.
    static func propertyName(_ flag: String) -> String {
        let words = flag.split(separator: "-")
        return words.enumerated().map { $0.offset == 0 ? String($0.element) : $0.element.capitalized }.joined()
    }
}

extension NameSpecification {
    /// The flag of the setting `key` in `SettingsCatalog`.
    static func setting(_ key: String) -> NameSpecification {
        .customLong(SettingsCatalog.flagName(key))
    }
}

extension ArgumentHelp {
    /// The help of the setting `key` in `SettingsCatalog`: its doc line, key, rule and default.
    static func setting(_ key: String) -> ArgumentHelp {
        ArgumentHelp(SettingsCatalog.flagHelp(key))
    }
}

/// A parsed option or flag whose value a setting takes, as text.
private protocol GivenFlag {
    /// The values given, as text; nil when the flag was not given.
    var givenTexts: [String]? { get }
}

private protocol FlagTexts {
    var flagTexts: [String]? { get }
}

extension Optional: FlagTexts where Wrapped: LosslessStringConvertible {
    var flagTexts: [String]? { map { [$0.description] } }
}

extension Array: FlagTexts where Element == String {
    var flagTexts: [String]? { isEmpty ? nil : self }
}

extension Option: GivenFlag where Value: FlagTexts {
    var givenTexts: [String]? { wrappedValue.flagTexts }
}

extension Flag: GivenFlag where Value == Bool {
    var givenTexts: [String]? { wrappedValue ? ["false"] : nil }
}
