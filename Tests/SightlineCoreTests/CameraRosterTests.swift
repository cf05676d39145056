import Foundation
import Testing
@testable import SightlineCore
import SightlineTesting

/// `<data-dir>/cameras.json`: cameras added, removed and switched at runtime, over the config's.
@Suite struct CameraRosterTests {
    /// Three config cameras (front, yard, attic) on `dataDir`.
    private func settings(dataDir: String = "/srv/sl", yardSource: String = "file:/videos/yard.mp4") throws -> ServeSettings {
        let config = try SightlineConfig.parse("""
            mqtt: {host: broker.local, clientId: sl}
            cameras:
              front:
                source: {spec: demo}
              yard:
                source: {spec: "\(yardSource)"}
                faces: {enabled: false}
              attic: {}
            """, origin: "t")
        var settings = ServeSettings()
        try settings.apply(config)
        settings.dataDir = dataDir
        return settings
    }

    @Test("an empty roster leaves the config's cameras as they are")
    func emptyRoster() throws {
        let top = try settings()
        let resolved = try CameraRoster().resolve(top: top)
        #expect(resolved.cameras.map(\.routeName) == ["front", "yard", "attic"])
        #expect(resolved.cameras.map(\.source) == (try top.cameraSettings()).map(\.source))
        #expect(resolved.roster == CameraRoster() && resolved.notes.isEmpty)
    }

    @Test("added cameras come after the config's, on their own data directory and the server's one MQTT connection; removed ones stay out")
    func addRemoveResolve() throws {
        let top = try settings()
        var roster = CameraRoster()
        roster.add(.init(name: "porch", source: "file:/v/porch.mp4", camera: "front-porch", faces: false), configSource: nil)
        roster.add(.init(name: "garage", source: "demo"), configSource: nil)
        roster.remove("yard")
        let resolved = try roster.resolve(top: top)
        #expect(resolved.cameras.map(\.routeName) == ["front", "attic", "porch", "garage"])
        let porch = resolved.cameras[2]
        #expect(porch.source == "file:/v/porch.mp4" && porch.cameraName == "front-porch" && !porch.facesEnabled)
        #expect(porch.dataDir == "/srv/sl/cameras/porch")
        #expect(top.mqtt.clientId == "sl", "the server's one connection (a camera holds no MQTT settings): the configured client id as it is")
        #expect(resolved.cameras[3].facesEnabled, "faces as at the top level when not given")
        #expect(resolved.roster == roster && resolved.notes.isEmpty)

        // Adding a name the roster has (one left out at start) replaces it.
        var again = roster
        again.add(.init(name: "Garage", source: "demo?fps=5"), configSource: nil)
        #expect(again.added.map(\.name) == ["porch", "Garage"] && again.added[1].source == "demo?fps=5")

        // Removing an added camera forgets it; removing a config camera remembers it.
        roster.remove("garage")
        #expect(roster.added.map(\.name) == ["porch"] && roster.removed == ["yard"])
    }

    @Test("a switched source holds while the config says what it said at the switch; then the config wins")
    func switchedSources() throws {
        var roster = CameraRoster()
        roster.switchSource(of: "yard", to: "demo?fps=5", configSource: "file:/videos/yard.mp4")
        roster.add(.init(name: "porch", source: "demo"), configSource: nil)
        roster.switchSource(of: "porch", to: "file:/v/other.mp4", configSource: nil)
        #expect(roster.added[0].source == "file:/v/other.mp4", "an added camera's own source changes")
        var resolved = try roster.resolve(top: try settings())
        #expect(resolved.cameras.map(\.source) == ["demo", "demo?fps=5", "auto", "file:/v/other.mp4"])
        #expect(resolved.roster == roster)

        // The config's source for yard changed since: the config's wins and the switch is forgotten.
        resolved = try roster.resolve(top: try settings(yardSource: "file:/videos/new-yard.mp4"))
        #expect(resolved.cameras[1].source == "file:/videos/new-yard.mp4")
        #expect(resolved.roster.sources.isEmpty && resolved.notes.count == 1)

        // Switching back to the config's own source is no switch at all.
        roster.switchSource(of: "yard", to: "file:/videos/yard.mp4", configSource: "file:/videos/yard.mp4")
        #expect(roster.sources.isEmpty)
    }

    @Test("the config wins over the roster: a name it now has, names it dropped; something always runs")
    func configChangedLater() throws {
        var roster = CameraRoster()
        roster.add(.init(name: "Attic", source: "demo"), configSource: nil)  // the config has 'attic' now
        roster.add(.init(name: "porch", source: "demo"), configSource: nil)
        roster.remove("cellar")  // not in the config (any more)
        let resolved = try roster.resolve(top: try settings())
        #expect(resolved.cameras.map(\.routeName) == ["front", "yard", "attic", "porch"])
        #expect(resolved.cameras[2].source == "auto", "the config's attic, not the added one")
        #expect(resolved.roster.added.map(\.name) == ["porch"] && resolved.roster.removed.isEmpty)
        #expect(resolved.notes.count == 2)

        // Every config camera removed (the config changed its order since): its first is kept.
        var all = CameraRoster()
        for name in ["front", "yard", "attic"] { all.remove(name) }
        all.add(.init(name: "porch", source: "demo"), configSource: nil)
        let kept = try all.resolve(top: try settings())
        #expect(kept.cameras.map(\.routeName) == ["front", "porch"] && kept.roster.removed == ["yard", "attic"])
    }

    @Test("re-adding a removed config camera restores it with the config's settings and the given source")
    func readdConfigCamera() throws {
        var roster = CameraRoster()
        roster.remove("yard")
        roster.add(.init(name: "yard", source: "demo"), configSource: "file:/videos/yard.mp4")
        #expect(roster.removed.isEmpty && roster.added.isEmpty)
        #expect(roster.sources["yard"] == .init(source: "demo", configSource: "file:/videos/yard.mp4"))
        let resolved = try roster.resolve(top: try settings())
        #expect(resolved.cameras.map(\.routeName) == ["front", "yard", "attic"])
        #expect(resolved.cameras[1].source == "demo" && !resolved.cameras[1].facesEnabled, "the config's faces: off")
    }

    @Test("without cameras: the one camera stays on the data directory and added ones get their own")
    func singleCameraServer() throws {
        var top = ServeSettings()
        top.camera = "porch"
        top.dataDir = "/srv/sl"
        var roster = CameraRoster()
        roster.add(.init(name: "yard", source: "demo"), configSource: nil)
        roster.switchSource(of: "porch", to: "demo?fps=5", configSource: top.source)
        let resolved = try roster.resolve(top: top)
        #expect(resolved.cameras.map(\.routeName) == ["porch", "yard"])
        #expect(resolved.cameras.map(\.dataDir) == ["/srv/sl", "/srv/sl/cameras/yard"])
        #expect(resolved.cameras.map(\.source) == ["demo?fps=5", "demo"], "its switched source kept")
    }

    @Test("an added camera's name, event name and source are checked", arguments: [
        CameraRoster.Added(name: "b@d", source: "demo"),
        CameraRoster.Added(name: String(repeating: "x", count: 65), source: "demo"),
        CameraRoster.Added(name: "ok", source: "bogus:thing"),
        CameraRoster.Added(name: "ok", source: "demo", camera: "sp ace"),
    ])
    func addedCameraChecks(_ entry: CameraRoster.Added) throws {
        #expect(throws: (any Error).self) { try ServeSettings().addedCameraSettings(entry) }
    }

    @Test("saved and loaded whole; no file is an empty roster")
    func saveAndLoad() throws {
        let dir = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let none = CameraRoster.load(dataDir: dir)
        #expect(none.roster == CameraRoster() && none.warning == nil)
        var roster = CameraRoster()
        roster.add(.init(name: "porch", source: "file:/v/porch.mp4", camera: "p", faces: true), configSource: nil)
        roster.remove("yard")
        roster.switchSource(of: "front", to: "demo?fps=5", configSource: "demo")
        try roster.save(dataDir: dir)
        let loaded = CameraRoster.load(dataDir: dir)
        #expect(loaded.roster == roster && loaded.warning == nil)
        let text = try String(contentsOfFile: CameraRoster.path(dataDir: dir), encoding: .utf8)
        #expect(text.contains("\"file:/v/porch.mp4\""), "paths readable, not escaped")
        let mode = try FileManager.default.attributesOfItem(atPath: CameraRoster.path(dataDir: dir))[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test("a malformed file is moved aside with a warning, and the config's cameras start", arguments: [
        "{\"added\": [", "[]", "{\"version\": 2, \"added\": [], \"removed\": [], \"sources\": {}}",
        "{\"version\": 1, \"added\": [{\"name\": 3}], \"removed\": [], \"sources\": {}}",
    ])
    func malformedFile(_ text: String) throws {
        let dir = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = CameraRoster.path(dataDir: dir)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        let loaded = CameraRoster.load(dataDir: dir, now: Date(timeIntervalSince1970: 1_700_000_000))
        #expect(loaded.roster == CameraRoster())
        let warning = try #require(loaded.warning)
        #expect(warning.contains("malformed") && warning.contains("cameras.json.malformed-1700000000"))
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(try String(contentsOfFile: path + ".malformed-1700000000", encoding: .utf8) == text, "kept as it was")
    }
}
