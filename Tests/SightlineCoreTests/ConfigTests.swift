import Testing
@testable import SightlineCore

@Suite struct ConfigTests {
    @Test func shippedConfigParsesAndApplies() throws {
        let config = try SightlineConfig.load(path: TestPaths.repository + "/config/sightline.yaml")
        var settings = ServeSettings()
        try settings.apply(config)
        #expect(settings.port == 8080)
        #expect(settings.host == "127.0.0.1")
        #expect(settings.jpegQuality == 80)
        try settings.validate()
    }

    @Test func unknownKeyIsNamed() {
        #expect {
            try SightlineConfig.parse("server:\n  prot: 80\n", origin: "x.yaml")
        } throws: { error in
            "\(error)".contains("unknown key 'prot'") && "\(error)".contains("x.yaml")
        }
    }

    @Test func wrongTypeIsNamed() {
        #expect {
            try SightlineConfig.parse("server:\n  port: eighty\n", origin: "x.yaml")
        } throws: { error in
            "\(error)".contains("server.port")
        }
    }

    @Test func brokenYAMLIsAnError() {
        #expect(throws: ConfigError.self) { try SightlineConfig.parse("server: [1, 2\n", origin: "x.yaml") }
    }

    @Test func outOfRangeValuesAreRefused() {
        var settings = ServeSettings()
        settings.jpegQuality = 0
        #expect(throws: ConfigError.self) { try settings.validate() }
        settings = ServeSettings()
        settings.source = "tape:/dev/null"
        #expect(throws: SourceSpecError.self) { try settings.validate() }
    }

    @Test func sourceSpecsParse() throws {
        #expect(try SourceSpec.parse("auto") == .auto)
        guard case .demo(let options) = try SourceSpec.parse("demo?size=1280x720&fps=25&seed=3") else {
            Issue.record("not a demo spec"); return
        }
        #expect(options.width == 1280 && options.height == 720 && options.fps == 25 && options.seed == 3)
        #expect(try SourceSpec.parse("v4l2:/dev/video2") == .v4l2(path: "/dev/video2"))
        #expect(try SourceSpec.parse("file:/a/b.avi?pace=max") == .file(path: "/a/b.avi", pace: .max, fps: nil))
        #expect(try SourceSpec.parse("rtsp://cam.local/stream?x=1") == .stream(url: "rtsp://cam.local/stream?x=1"))
        #expect(throws: SourceSpecError.self) { try SourceSpec.parse("demo?size=10x10") }
        #expect(throws: SourceSpecError.self) { try SourceSpec.parse("file:/a.avi?pace=slow") }
        #expect(throws: SourceSpecError.self) { try SourceSpec.parse("v4l2:video0") }
    }

    @Test func templateArgumentNames() {
        #expect(Template.parse(argument: "/x/logo.png=Brand") == ("/x/logo.png", "Brand"))
        #expect(Template.parse(argument: "/x/logo.png") == ("/x/logo.png", "logo"))
    }

    @Test func tokenIsGeneratedPrivateAndReused() throws {
        let dir = try TestPaths.temporaryDirectory()
        let first = try AccessToken.resolve(environment: [:], configured: nil, dataDir: dir)
        #expect(first.origin == .generated)
        #expect(first.value.count == 64)
        let attributes = try FileManager.default.attributesOfItem(atPath: dir + "/token")
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let second = try AccessToken.resolve(environment: [:], configured: nil, dataDir: dir)
        #expect(second.origin == .file && second.value == first.value)
        let fromEnvironment = try AccessToken.resolve(environment: ["SIGHTLINE_TOKEN": "abc"], configured: "zzz", dataDir: dir)
        #expect(fromEnvironment.value == "abc")
        #expect(fromEnvironment.matches("abc"))
        #expect(!fromEnvironment.matches("abd"))
        #expect(!fromEnvironment.matches("ab"))
        #expect(!fromEnvironment.matches(nil))
    }
}

import Foundation
