import Testing
@testable import SightlineSupport
@testable import SightlineVision
@testable import SightlinePipeline
@testable import SightlineEvents
@testable import SightlineCore
import SightlineTesting

@Suite struct ConfigTests {
    @Test func shippedConfigParsesAndApplies() throws {
        let config = try SightlineConfig.load(path: TestPaths.repository + "/config/sightline.yaml")
        var settings = ServeSettings()
        try settings.apply(config)
        #expect(settings.port == 8080)
        #expect(settings.host == "127.0.0.1")
        #expect(settings.jpegQuality == 80)
        #expect(settings.opencvThreads == 1)
        #expect(settings.video == VideoSettings())
        #expect(settings.record == RecordSettings())
        #expect(settings.events.clips && settings.events.preCaptureSeconds == 3 && settings.events.postCaptureSeconds == 3)
        try settings.validate()
    }

    @Test func clipsAndRecordingComeFromTheConfigAndAreChecked() throws {
        var settings = ServeSettings()
        let text = "events:\n  clips: false\n  preCaptureSeconds: 10\n  postCaptureSeconds: 5\n  maxClipSeconds: 60\n"
            + "record:\n  enabled: true\n  segmentSeconds: 30\n  maxAgeHours: 1\n  maxGigabytes: 0.5\n"
        try settings.apply(SightlineConfig.parse(text, origin: "x.yaml"))
        #expect(!settings.events.clips && settings.events.clipOptions.preCapture == 10)
        #expect(settings.events.clipOptions.postCapture == 5 && settings.events.clipOptions.maxSeconds == 60)
        #expect(settings.record.enabled && settings.record.segmentSeconds == 30)
        #expect(settings.record.limits == RecordingStore.Limits(maxAgeSeconds: 3600, maxBytes: 536_870_912))
        try settings.validate()
        for wrong in ["events:\n  preCaptureSeconds: 61", "events:\n  postCaptureSeconds: -1", "events:\n  maxClipSeconds: 1",
                      "record:\n  segmentSeconds: 2", "record:\n  maxGigabytes: 0"] {
            var bad = ServeSettings()
            try bad.apply(SightlineConfig.parse(wrong + "\n", origin: "x.yaml"))
            #expect(throws: ConfigError.self, "\(wrong)") { try bad.validate() }
        }
        #expect(throws: ConfigError.self) { try SightlineConfig.parse("record:\n  format: mkv\n", origin: "x.yaml") }
    }

    @Test func videoComesFromTheConfigAndIsChecked() throws {
        var settings = ServeSettings()
        let text = "video:\n  preset: ultrafast\n  bitrateKbps: 1500\n  keyframeSeconds: 4\n  low: false\n  lowKbps: 300\n"
        try settings.apply(SightlineConfig.parse(text, origin: "x.yaml"))
        #expect(settings.video.encoder.preset == "ultrafast")
        #expect(settings.video.encoder.bitrateKbps == 1500)
        #expect(settings.video.encoder.keyframeSeconds == 4)
        #expect(!settings.video.lowEnabled && settings.video.lowEncoder.bitrateKbps == 300)
        try settings.validate()
        for wrong in ["preset: quick", "crf: 60", "keyframeSeconds: 0", "lowScale: 2", "maxLagSeconds: 0"] {
            var bad = ServeSettings()
            try bad.apply(SightlineConfig.parse("video:\n  \(wrong)\n", origin: "x.yaml"))
            #expect(throws: ConfigError.self) { try bad.validate() }
        }
        #expect(throws: ConfigError.self) { try SightlineConfig.parse("video:\n  codec: vp9\n", origin: "x.yaml") }
    }

    @Test func opencvThreadsComeFromTheConfigAndAreBounded() throws {
        var settings = ServeSettings()
        try settings.apply(SightlineConfig.parse("server:\n  opencvThreads: 2\n", origin: "x.yaml"))
        #expect(settings.opencvThreads == 2)
        settings.opencvThreads = 0
        #expect(throws: ConfigError.self) { try settings.validate() }
    }

    @Test func refineCropSizeComesFromTheConfigAndIsChecked() throws {
        var settings = ServeSettings()
        try settings.apply(SightlineConfig.parse("faces:\n  refineCropSize: 224\n", origin: "x.yaml"))
        #expect(settings.faceRefineCropSize == 224)
        try settings.validate()
        for wrong in [128, 200, 352] {
            settings.faceRefineCropSize = wrong
            #expect(throws: ConfigError.self) { try settings.validate() }
        }
    }

    @Test func fineEverySecondsComesFromTheConfigAndIsChecked() throws {
        var settings = ServeSettings()
        #expect(settings.faceFineEverySeconds == 1)
        try settings.apply(SightlineConfig.parse("faces:\n  fineEverySeconds: 0\n", origin: "x.yaml"))
        #expect(settings.faceFineEverySeconds == 0)
        try settings.validate()
        for wrong in [-1, 0.1, 61] {
            settings.faceFineEverySeconds = wrong
            #expect(throws: ConfigError.self) { try settings.validate() }
        }
    }

    @Test func opticalFlowIsOnByDefaultAndTheConfigTurnsItOff() throws {
        var settings = ServeSettings()
        #expect(settings.faceOpticalFlow)
        try settings.apply(SightlineConfig.parse("faces:\n  opticalFlow: false\n", origin: "x.yaml"))
        #expect(!settings.faceOpticalFlow)
        #expect(throws: (any Error).self) {
            try SightlineConfig.parse("faces:\n  opticalFlow: sometimes\n", origin: "x.yaml")
        }
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

    @Test func accessAndTLSKeys() throws {
        let config = try SightlineConfig.parse("""
            access: {view: token, allowedOrigins: ["https://cam.example"], allowedHosts: [cam.local], sessionMinutes: 30}
            tls: {auto: true}
            """, origin: "t")
        var settings = ServeSettings()
        try settings.apply(config)
        #expect(settings.viewOpen == false && !settings.viewingIsOpen)
        #expect(settings.allowedOrigins == ["https://cam.example"] && settings.allowedHosts == ["cam.local"])
        #expect(settings.sessionMinutes == 30 && settings.tlsAuto && settings.tlsEnabled)
        var bad = ServeSettings()
        #expect(throws: ConfigError.self) { try bad.apply(SightlineConfig.parse("access: {view: maybe}", origin: "t")) }
        #expect(throws: ConfigError.self) { try SightlineConfig.parse("access: {viewers: open}", origin: "t") }
        var open = ServeSettings()
        open.host = "0.0.0.0"
        #expect(!open.viewingIsOpen)
        open.host = "127.0.0.1"
        #expect(open.viewingIsOpen)
    }

    @Test func camerasInTheFilesOrderWithTheirOverrides() throws {
        let config = try SightlineConfig.parse("""
            dataDir: /srv/sightline
            faces: {maxFaces: 5}
            mqtt: {host: broker.local, clientId: sl}
            cameras:
              zfront:
                source: {spec: demo}
              yard:
                source: {spec: "file:/videos/yard.mp4", fps: 15}
                faces: {enabled: false}
                camera: back-yard
              attic: {}
            """, origin: "t")
        #expect(config.cameraOrder == ["zfront", "yard", "attic"], "the file's order, not sorted")
        var settings = ServeSettings()
        try settings.apply(config)
        settings.templates = ["/x/logo.png"]  // as a flag would set it
        let cameras = try settings.cameraSettings()
        #expect(cameras.map(\.routeName) == ["zfront", "yard", "attic"])
        #expect(cameras.map(\.cameraName) == ["zfront", "back-yard", "attic"])
        #expect(cameras.map(\.source) == ["demo", "file:/videos/yard.mp4", "auto"])
        #expect(cameras[1].cameraFPS == 15 && cameras[0].cameraFPS == 30)
        #expect(cameras.map(\.facesEnabled) == [true, false, true])
        #expect(cameras.allSatisfy { $0.maxFaces == 5 && $0.templates == ["/x/logo.png"] })
        #expect(cameras.map(\.dataDir) == ["/srv/sightline/cameras/zfront", "/srv/sightline/cameras/yard",
                                           "/srv/sightline/cameras/attic"])
        #expect(settings.mqtt.clientId == "sl",
                "one broker configuration, the server's (a camera holds none), so one connection (MQTTConnections) with the configured client id")
        // Without cameras: one, as before.
        var one = ServeSettings()
        one.camera = "porch"
        let single = try one.cameraSettings()
        #expect(single.count == 1 && single[0].routeName == "porch" && single[0].dataDir == "data")
    }

    @Test("the README's cameras: example parses as printed and makes its two cameras")
    func readmeCamerasExample() throws {
        let readme = try String(contentsOfFile: TestPaths.repository + "/README.md", encoding: .utf8)
        let section = try #require(readme.range(of: "### Several cameras (`cameras:`)"))
        let rest = readme[section.upperBound...]
        let start = try #require(rest.range(of: "```yaml\n"))
        let end = try #require(rest[start.upperBound...].range(of: "```"))
        var settings = ServeSettings()
        try settings.apply(SightlineConfig.parse(String(rest[start.upperBound..<end.lowerBound]), origin: "README.md"))
        let cameras = try settings.cameraSettings()
        #expect(cameras.map(\.routeName) == ["front", "yard"])
        #expect(cameras.map(\.cameraName) == ["front", "back-yard"])
        #expect(cameras.map(\.facesEnabled) == [true, false])
        #expect(cameras[0].source == "v4l2:/dev/video0" && cameras[1].source.hasPrefix("rtsp://"))
        for camera in cameras { try settings.validate(camera) }
    }

    @Test func badCamerasAreRefusedWithTheirName() throws {
        #expect(throws: ConfigError.self) { try SightlineConfig.parse("cameras: {a: {sorce: {spec: demo}}}", origin: "t") }
        #expect(throws: ConfigError.self) { try SightlineConfig.parse("cameras: {a: {faces: {maxFace: 3}}}", origin: "t") }
        #expect(throws: ConfigError.self) { try SightlineConfig.parse("cameras: [a, b]", origin: "t") }
        // A camera may be its source spec alone (`a: demo`), not any other kind of value.
        #expect(throws: ConfigError.self) { try SightlineConfig.parse("cameras: {a: [demo]}", origin: "t") }
        #expect(throws: ConfigError.self) { try SightlineConfig.parse("cameras: {a: 3}", origin: "t") }
        var settings = ServeSettings()
        try settings.apply(SightlineConfig.parse("cameras: {\"front door\": {source: {spec: demo}}}", origin: "t"))
        #expect(throws: ConfigError.self) { try settings.cameraSettings() }
        var twice = ServeSettings()
        try twice.apply(SightlineConfig.parse("cameras: {Front: {}, front: {}}", origin: "t"))
        #expect(throws: ConfigError.self) { try twice.cameraSettings() }
    }
}

import Foundation
