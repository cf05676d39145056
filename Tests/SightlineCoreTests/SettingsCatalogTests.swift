import Foundation
import Testing
@testable import SightlineSupport
@testable import SightlineVision
@testable import SightlineCore
import SightlineTesting

/// `SettingsCatalog`: one definition per setting, from which the config file
/// is read, flags are named and applied, values are checked and the config
/// reference in docs/configuration.md is made.
@Suite struct SettingsCatalogTests {
    @Test("every setting has a row in docs/configuration.md, and its block is what `make docs` makes")
    func configReferenceIsGenerated() throws {
        let document = try String(contentsOfFile: TestPaths.repository + "/docs/configuration.md", encoding: .utf8)
        let block = try #require(SettingsReference.current(in: document),
                                 "docs/configuration.md has no \(SettingsReference.begin) ... \(SettingsReference.end) block")
        let rows = Set(block.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("| `") else { return nil }
            return line.dropFirst(3).split(separator: "`").first.map(String.init)
        })
        let missing = SettingsCatalog.all.map(\.key).filter { !rows.contains($0) }
        #expect(missing.isEmpty, "settings with no row in docs/configuration.md (run `make docs`): \(missing)")
        #expect(block == SettingsReference.block(),
                "docs/configuration.md's settings table differs from the catalog's: run `make docs` and commit it")
    }

    @Test("keys are unique and dotted, every flag is one setting's, every doc line is there")
    func definitionsAreWellFormed() {
        let keys = SettingsCatalog.all.map(\.key)
        #expect(Set(keys).count == keys.count, "a key defined twice")
        let flags = SettingsCatalog.all.compactMap(\.flag)
        #expect(Set(flags).count == flags.count, "a flag given to two settings")
        for definition in SettingsCatalog.all {
            #expect(!definition.doc.isEmpty, "\(definition.key) has no doc line")
            #expect(definition.key.split(separator: ".").allSatisfy { !$0.isEmpty }, "\(definition.key)")
            #expect(definition.problem(in: ServeSettings()) == nil, "the default of \(definition.key) breaks its own rule")
        }
    }

    @Test("defaults come from the settings' own")
    func defaultsAreTheSettingsOwn() throws {
        func shown(_ key: String) throws -> String? { try #require(SettingsCatalog.definition(key)).defaultText }
        #expect(try shown("server.port") == "8080")
        #expect(try shown("jpeg.quality") == "80")
        #expect(try shown("analysis.size") == String(AnalysisSize.defaultLongSide))
        #expect(try shown("templates.threshold") == "0.7")
        #expect(try shown("faces.region") == "[]")
        #expect(try shown("video.bitrateKbps") == "0")
        #expect(try shown("access.view") == nil, "unset")
        #expect(try shown("tls.cert") == nil, "unset")
    }

    @Test("the shipped config's every key is a catalog key, and it parses to the defaults")
    func shippedConfigKeysAreCatalogKeys() throws {
        let config = try SightlineConfig.load(path: TestPaths.repository + "/config/sightline.yaml")
        #expect(!config.keys.isEmpty)
        for key in config.keys {
            #expect(SettingsCatalog.definition(key) != nil, "\(key)")
        }
        var settings = ServeSettings()
        try settings.apply(config)
        let fresh = ServeSettings()
        for definition in SettingsCatalog.all {
            #expect(definition.yamlText(in: settings) == definition.yamlText(in: fresh),
                    "config/sightline.yaml's \(definition.key) is not the built-in default")
        }
    }

    @Test("a value out of its rule is refused with a message naming its key")
    func rulesNameTheirKey() {
        var settings = ServeSettings()
        settings.jpegQuality = 0
        #expect { try settings.validate() } throws: { "\($0)" == "jpeg.quality must be 1-100, got 0" }
        settings = ServeSettings()
        settings.port = 70000
        #expect { try settings.validate() } throws: { "\($0)" == "server.port must be 0-65535 (0: any free port), got 70000" }
        settings = ServeSettings()
        settings.faceRefineCropSize = 200
        #expect { try settings.validate() } throws: { "\($0)".hasPrefix("faces.refineCropSize must be one of 160, 192") }
        settings = ServeSettings()
        settings.video.encoder.bitrateKbps = 10
        #expect { try settings.validate() } throws: { "\($0)" == "video.bitrateKbps must be 0 (crf) or 50-200000, got 10" }
        settings = ServeSettings()
        settings.faceIdleRate = 20
        #expect { try settings.validate() } throws: { "\($0)".contains("faces.idleRate") }
    }

    @Test("an unknown key or a wrong type is refused with its name, and the nearest key")
    func unknownKeysAndTypes() {
        #expect { try SightlineConfig.parse("faces:\n  maxRat: 3\n", origin: "x.yaml") } throws: { error in
            "\(error)".contains("unknown key 'maxRat' in 'faces' (did you mean 'maxRate'?)") && "\(error)".contains("x.yaml")
        }
        #expect { try SightlineConfig.parse("faces:\n  maxRate: fast\n", origin: "x.yaml") } throws: { error in
            "\(error)".contains("faces.maxRate must be a number, got 'fast'")
        }
        #expect { try SightlineConfig.parse("cameras:\n  yard:\n    faces: {maxFaces: many}\n", origin: "x.yaml") } throws: { error in
            "\(error)".contains("cameras.yard.faces.maxFaces must be an integer")
        }
        #expect { try SightlineConfig.parse("faces: {region: [0.1, 0.2]}\n", origin: "x.yaml") } throws: { error in
            "\(error)".contains("faces.region must be [] or [x, y, w, h], got [0.1, 0.2]")
        }
    }

    @Test("a camera holds only its own settings: the server's are refused under cameras:")
    func camerasCannotSetServerSettings() {
        for text in ["cameras: {a: {mqtt: {host: broker}}}", "cameras: {a: {server: {port: 1}}}", "cameras: {a: {token: x}}",
                     "cameras: {a: {video: {crf: 20}}}"] {
            #expect(throws: ConfigError.self, "\(text)") { try SightlineConfig.parse(text, origin: "t") }
        }
        #expect { try SightlineConfig.parse("cameras: {a: {mqtt: {host: broker}}}", origin: "t") } throws: { error in
            "\(error)".contains("cameras.a") && "\(error)".contains("server's")
        }
    }

    @Test("a camera holds only its own settings: no host, port, token, encoder, recording or MQTT")
    func aCameraHoldsOnlyItsOwn() throws {
        let own = Set(Mirror(reflecting: CameraSettings()).children.compactMap(\.label))
        let server = Set(Mirror(reflecting: ServerSettings()).children.compactMap(\.label))
        #expect(own.isDisjoint(with: server))
        for name in ["host", "port", "token", "dataDir", "tlsCert", "jpegQuality", "video", "record", "mqtt"] {
            #expect(server.contains(name) && !own.contains(name), "\(name)")
        }
        let camera = try #require(try ServeSettings().cameraSettings().first)
        #expect(Set(Mirror(reflecting: camera).children.compactMap(\.label)) == ["routeName", "dataDir", "settings"])
        // The scope is the key path's root: every camera setting a camera of cameras: gives lands in its CameraSettings.
        var settings = ServeSettings()
        try settings.apply(SightlineConfig.parse("cameras: {a: {faces: {maxFaces: 3}, analysis: {size: 320}, camera: door}}", origin: "t"))
        let a = try #require(try settings.cameraSettings().first)
        #expect(a.maxFaces == 3 && a.analysisSize == 320 && a.cameraName == "door" && settings.maxFaces == 10)
    }

    @Test("the special cases: empty strings unset, bitrate 0 is crf, access.view, cameras in the file's order")
    func specialCases() throws {
        var settings = ServeSettings()
        try settings.apply(SightlineConfig.parse("""
            token: ""
            mqtt: {topicPrefix: "", username: ""}
            video: {bitrateKbps: 0, x264Params: ""}
            access: {view: open}
            faces: {region: [0.1, 0.1, 0.5, 0.5], model: ""}
            cameras: {zed: {camera: ""}, alpha: "demo", mid: ~}
            """, origin: "t"))
        #expect(settings.token == nil && settings.mqtt.topicPrefix == "sightline" && settings.mqtt.username == nil)
        #expect(settings.video.encoder.bitrateKbps == nil && settings.video.encoder.x264Params == nil)
        #expect(settings.viewOpen == true && settings.faceRegion == NormalizedBox(x: 0.1, y: 0.1, w: 0.5, h: 0.5))
        #expect(settings.faceModel == nil)
        var refined = ServeSettings()
        try refined.apply(SightlineConfig.parse("templates: {refineScale: 0}\ncameras: {a: {templates: {refineScale: 0.5}}}", origin: "t"))
        let refinedCameras = try refined.cameraSettings()
        #expect(refined.matcherOptions.refineScale == nil && refinedCameras[0].matcherOptions.refineScale == 0.5)
        let cameras = try settings.cameraSettings()
        #expect(cameras.map(\.routeName) == ["zed", "alpha", "mid"] && cameras.map(\.cameraName) == ["zed", "alpha", "mid"])
        #expect(cameras.map(\.source) == ["auto", "demo", "auto"])
    }

    @Test("serve's flags are the catalog's: each flagged setting is a serve option, each serve option but --config a setting's")
    func flagsAreTheCatalogs() throws {
        let binary = ProcessInfo.processInfo.environment["SIGHTLINE_BIN"] ?? TestPaths.repository + "/.build/release/sightline"
        try #require(FileManager.default.isExecutableFile(atPath: binary), "no binary at \(binary): build first")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve", "--help"]  // not --help-hidden: hidden test hooks are no settings
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let options = Set(text.split(separator: "\n").compactMap { line -> String? in
            let trimmed = line.drop { $0 == " " }
            guard line.hasPrefix("  "), trimmed.hasPrefix("--") else { return nil }
            return String(trimmed.dropFirst(2).prefix { $0.isLetter || $0.isNumber || $0 == "-" })
        })
        let flags = Set(SettingsCatalog.all.compactMap(\.flag))
        #expect(flags.subtracting(options).isEmpty, "catalog flags that serve lacks: \(flags.subtracting(options).sorted())")
        let others = options.subtracting(flags).subtracting(["config", "help", "version"])
        #expect(others.isEmpty, "serve options that name no catalog setting: \(others.sorted())")
        // Each flag's help is its setting's doc line.
        for definition in SettingsCatalog.all where definition.flag != nil {
            #expect(text.contains("(\(definition.key)"), "--\(definition.flag!) does not show \(definition.key)")
        }
    }
}
