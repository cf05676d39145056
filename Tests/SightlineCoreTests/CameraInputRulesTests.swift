import Foundation
import Logging
import Synchronization
import Testing
@testable import SightlineSupport
@testable import SightlinePipeline
@testable import SightlineHTTP
@testable import SightlineCore
import SightlineTesting

/// Issue 38: what admins and config files may name as cameras and sources,
/// and what the log and `/metrics` say of them.
@Suite struct CameraInputRulesTests {
    // MARK: - A source that is the server itself (item 2)

    @Test("A stream URL at this machine's address and the server's port is the server itself")
    func selfReferenceIsRecognised() {
        let names: Set<String> = ["myhost", "10.1.2.3"]
        for url in ["http://127.0.0.1:8080/cam/x/stream.mjpg", "http://localhost:8080/stream.mjpg", "http://LOCALHOST.:8080/",
                    "http://[::1]:8080/", "http://0.0.0.0:8080/", "http://127.1:8080/", "http://127.9.9.9:8080/",
                    "rtsp://u:p@localhost:8080/x", "http://[::ffff:127.0.0.1]:8080/", "http://MyHost:8080/x",
                    "http://10.1.2.3:8080/", "http://cams.example:8080/", "http://a.localhost:8080/"] {
            #expect(SourcePolicy.isSelf(url, serverHost: "cams.example", port: 8080, localNames: names), "\(url)")
        }
        for url in ["http://127.0.0.1:8081/", "http://cam.local:8080/", "http://10.1.2.4:8080/", "rtsp://127.0.0.1/x",
                    "udp://127.0.0.1", "http://1.2.3.4:8080/"] {
            #expect(!SourcePolicy.isSelf(url, serverHost: "cams.example", port: 8080, localNames: names), "\(url)")
        }
        // The scheme's default port counts; port 0 (not bound yet) matches nothing.
        #expect(SourcePolicy.isSelf("http://127.0.0.1/stream.mjpg", serverHost: "127.0.0.1", port: 80, localNames: []))
        #expect(!SourcePolicy.isSelf("http://127.0.0.1:0/", serverHost: "127.0.0.1", port: 0, localNames: []))
    }

    @Test("The server itself is refused at runtime, offered or not, and in the config at start")
    func selfReferenceIsRefused() throws {
        let policy = SourcePolicy(mediaFolders: [], dataDir: "/nonexistent-data", trusted: ["http://127.0.0.1:8080/ws"],
                                  host: "127.0.0.1", port: 8080, localNames: [])
        let refusal = try #require(policy.refusal("http://u:pw@127.0.0.1:8080/cam/a/stream.mjpg", offered: true))
        #expect(refusal.error == "source is this server")
        #expect(!refusal.detail.contains("pw@"), "the detail shows the URL as logs do")
        #expect(policy.refusal("http://127.0.0.1:8080/ws") != nil, "even one the config names")
        #expect(policy.refusal("http://127.0.0.1:8081/stream.mjpg") == nil)

        var settings = ServeSettings()
        settings.port = 8080
        settings.source = "http://localhost:8080/stream.mjpg"
        #expect(throws: ConfigError.self) { try settings.validate() }
        settings.source = "demo"
        settings.offeredSources = ["http://127.0.0.1:8080/cam/x/stream.mjpg"]
        #expect(throws: ConfigError.self) { try settings.validate() }
        settings.offeredSources = ["http://127.0.0.1:8081/stream.mjpg"]
        try settings.validate()
    }

    // MARK: - Files and devices (item 6)

    /// A media folder with a video, a symlink out of it, and the data directory inside it.
    private func scratch() throws -> (root: String, policy: SourcePolicy) {
        let root = NSTemporaryDirectory() + "sightline-policy-\(UUID().uuidString)"
        let media = root + "/media"
        try FileManager.default.createDirectory(atPath: media + "/data", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/elsewhere", withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: media + "/clip.mp4", contents: Data([0]))
        FileManager.default.createFile(atPath: media + "/data/token", contents: Data([0]))
        FileManager.default.createFile(atPath: root + "/elsewhere/secret.mp4", contents: Data([0]))
        try FileManager.default.createSymbolicLink(atPath: media + "/out.mp4", withDestinationPath: root + "/elsewhere/secret.mp4")
        try FileManager.default.createSymbolicLink(atPath: media + "/shadow", withDestinationPath: "/etc/shadow")
        try FileManager.default.createSymbolicLink(atPath: root + "/elsewhere/in.mp4", withDestinationPath: media + "/clip.mp4")
        let policy = SourcePolicy(mediaFolders: [media], dataDir: media + "/data", trusted: ["file:\(root)/elsewhere/secret.mp4"],
                                  host: "127.0.0.1", port: 8080, localNames: [])
        return (root, policy)
    }

    @Test("Files only under a media folder, never in the data directory, symlinks and .. resolved")
    func filesFollowTheMediaFolders() throws {
        let (root, policy) = try scratch()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let media = root + "/media"
        for allowed in ["file:\(media)/clip.mp4", "file:\(media)/clip.mp4?pace=max", "file:\(media)/not-yet.mp4",
                        "file:\(media)/new/folder/x.mp4", "file:\(root)/elsewhere/in.mp4", "file:\(media)/./clip.mp4",
                        "file:\(root)/elsewhere/../media/clip.mp4",
                        // Named by the config: trusted wherever it is.
                        "file:\(root)/elsewhere/secret.mp4"] {
            #expect(policy.refusal(allowed) == nil, "\(allowed)")
        }
        for refused in ["file:/etc/shadow", "file:\(media)/shadow", "file:\(media)/out.mp4", "file:\(media)/data/token",
                        "file:\(media)/data/cameras.json", "file:\(media)/../elsewhere/secret.mp4",
                        "file:\(media)/missing/../../elsewhere/secret.mp4", "file:\(root)/elsewhere"] {
            let refusal = policy.refusal(refused)
            #expect(refusal?.error == "source not allowed", "\(refused)")
        }
        #expect(policy.refusal("file:\(media)/data/token")?.detail.contains("data directory") == true)
        // An offered one (GET /api/sources) passes; with no media folder, no other file does.
        #expect(policy.refusal("file:/etc/shadow", offered: true) == nil)
        let none = SourcePolicy(mediaFolders: [], dataDir: "/nonexistent", trusted: [], host: "127.0.0.1", port: 1, localNames: [])
        #expect(none.refusal("file:\(media)/clip.mp4")?.detail.contains("no media folder") == true)
    }

    @Test("V4L2: /dev/videoN and /dev/v4l links to one only")
    func devicesAreCaptureDevicesOnly() {
        let policy = SourcePolicy(mediaFolders: [], dataDir: "/nonexistent", trusted: [], host: "127.0.0.1", port: 1, localNames: [])
        for allowed in ["v4l2:/dev/video0", "v4l2:/dev/video17", "v4l2:/dev/v4l/by-id/usb-Cam_123-video-index0",
                        "v4l2:/dev/v4l/by-path/pci-0000:00:14.0-usb-0:1:1.0-video-index0", "demo", "auto",
                        "rtsp://cam.local/live"] {
            #expect(policy.refusal(allowed) == nil, "\(allowed)")
        }
        for refused in ["v4l2:/dev/mem", "v4l2:/dev/null", "v4l2:/dev/video", "v4l2:/dev/videox", "v4l2:/dev/sda",
                        "v4l2:/dev/v4l/by-id/../../mem", "v4l2:/dev/video0/../mem", "v4l2:/dev/v4l/by-id/"] {
            #expect(policy.refusal(refused)?.error == "source not allowed", "\(refused)")
        }
    }

    @Test("Media folders: media: and --media-dir, and always the folders of the config's own files")
    func mediaFoldersInEffect() throws {
        var settings = ServeSettings()
        try settings.apply(SightlineConfig.parse("""
            media: [/srv/media]
            source: {spec: "file:/srv/videos/a.mp4", offer: ["file:/mnt/usb/b.avi", "demo"]}
            cameras:
              yard: {source: "file:/srv/yard/c.mp4"}
            """, origin: "x.yaml"))
        #expect(settings.mediaFolders == ["/srv/media"])
        #expect(settings.mediaFoldersInEffect == ["/srv/media", "/srv/videos", "/mnt/usb", "/srv/yard"])
        #expect(Set(settings.configuredSources) == ["file:/srv/videos/a.mp4", "file:/mnt/usb/b.avi", "demo", "file:/srv/yard/c.mp4"])
    }

    // MARK: - Camera names (item 7)

    @Test("Reserved names (routes, MQTT topics, Windows devices) are refused in any case")
    func reservedNames() throws {
        for name in ["api", "API", "ws", "cam", "metrics", "healthz", "Metrics", "CON", "con", "Prn", "aux", "NUL", "COM1",
                     "lpt9", "events", "stats", "available", "snapshot", "stream"] {
            let problem = try #require(ServeSettings.cameraNameProblem(name), "\(name)")
            #expect(problem.contains("reserved"), "\(name)")
            #expect(!ServeSettings.isValidCameraName(name))
        }
        for name in ["front", "vm", "VM", "console", "api2", "com10", "my-cam_1"] {
            #expect(ServeSettings.isValidCameraName(name), "\(name)")
        }
        #expect(ServeSettings.cameraNameProblem(".")?.contains("1-64 letters") == true)
        #expect(ServeSettings.cameraNameProblem("..")?.contains("1-64 letters") == true)
        var settings = ServeSettings()
        try settings.apply(SightlineConfig.parse("cameras:\n  api: {source: demo}\n", origin: "x.yaml"))
        #expect(throws: ConfigError.self) { _ = try settings.cameraSettings() }
        #expect(throws: ConfigError.self) { _ = try ServeSettings().addedCameraSettings(.init(name: "Con", source: "demo")) }
        #expect(throws: ConfigError.self) {
            _ = try ServeSettings().addedCameraSettings(.init(name: "porch", source: "demo", camera: "stats"))
        }
    }

    @Test("The roster compares names one way: removing or switching VM is vm's")
    func rosterNamesIgnoreCase() {
        var roster = CameraRoster(added: [.init(name: "vm", source: "demo")])
        #expect(roster.isAdded("VM"))
        roster.switchSource(of: "Vm", to: "demo?fps=5", configSource: nil)
        #expect(roster.added.first?.source == "demo?fps=5")
        roster.remove("VM")
        #expect(roster.added.isEmpty && roster.removed.isEmpty)
        var config = CameraRoster()
        config.remove("Yard")
        config.remove("yard")
        #expect(config.removed == ["Yard"])
    }

    // MARK: - Passwords in logs (item 4)

    @Test("Log form: a stream URL's password and secret query values masked; user, host and path kept")
    func logFormMasksSecrets() {
        #expect(SourceSpec.logForm("rtsp://u:secretpw@cam.local/x") == "rtsp://u:***@cam.local/x")
        #expect(SourceSpec.logForm("rtsp://u:p@ss:w@rd@cam.local:554/x?channel=1") == "rtsp://u:***@cam.local:554/x?channel=1")
        #expect(SourceSpec.logForm("http://cam.local/video.mjpg?user=admin&password=hunter2&token=abc&res=hd")
                == "http://cam.local/video.mjpg?user=admin&password=***&token=***&res=hd")
        #expect(SourceSpec.logForm("rtsp://admin@cam.local/x") == "rtsp://admin@cam.local/x")
        #expect(SourceSpec.logForm("rtsp://cam.local/live") == "rtsp://cam.local/live")
        #expect(SourceSpec.logForm("file:/srv/a.mp4") == "file:/srv/a.mp4")
        #expect(SourceSpec.logForm("demo?fps=5") == "demo?fps=5")
        let url = "rtsp://u:secretpw@127.0.0.1:1/x"
        #expect(SourceSpec.redactForLog("\(url): Connection refused", spec: url) == "rtsp://u:***@127.0.0.1:1/x: Connection refused")
    }

    @Test("The capture loop's no-signal line names the source without its password")
    func noSignalLineHasNoPassword() {
        let records = LogRecords()
        var logger = Logger(label: "test") { _ in RecordingLogHandler(records: records) }
        logger.logLevel = .info
        let url = "rtsp://u:secretpw@127.0.0.1:1/x"
        let clock = ManualClock()
        let loop = CaptureLoop(source: RefusingSource(uri: url), spec: url, mailbox: FrameMailbox(), stats: PipelineStats(),
                               logger: logger, clock: clock)
        loop.start()
        defer { loop.stop() }
        #expect(clock.waitForSleepers(1))
        let lines = records.lines
        #expect(lines.contains { $0.contains("no signal") && $0.contains("rtsp://u:***@127.0.0.1:1/x") }, "\(lines)")
        #expect(!lines.contains { $0.contains("secretpw") }, "\(lines)")
        #expect(loop.status.spec == url, "the status (admins') keeps the spec whole")
    }

    // MARK: - The config's source as a string (item 9)

    @Test("source: a spec string at the top level, per camera, or as the camera itself")
    func sourceAsAString() throws {
        var settings = ServeSettings()
        try settings.apply(SightlineConfig.parse("source: \"demo?fps=5\"\n", origin: "x.yaml"))
        #expect(settings.source == "demo?fps=5")
        var cameras = ServeSettings()
        try cameras.apply(SightlineConfig.parse("""
            cameras:
              front: {source: "rtsp://cam.local/live"}
              yard:
                source: demo
                faces: {enabled: false}
              porch: "file:/srv/porch.mp4"
              side: {source: {spec: "demo?seed=2", fps: 10}}
            """, origin: "x.yaml"))
        let each = try cameras.cameraSettings()
        #expect(each.map(\.routeName) == ["front", "yard", "porch", "side"])
        #expect(each.map(\.source) == ["rtsp://cam.local/live", "demo", "file:/srv/porch.mp4", "demo?seed=2"])
        #expect(!each[1].facesEnabled && each[3].cameraFPS == 10)
        // A mapping still says what is wrong in it; other kinds are refused with the choice named.
        #expect(throws: ConfigError.self) { _ = try SightlineConfig.parse("source: {spek: demo}\n", origin: "x.yaml") }
        do {
            _ = try SightlineConfig.parse("source: [demo]\n", origin: "x.yaml")
            Issue.record("a list is not a source")
        } catch {
            #expect("\(error)".contains("spec string or a mapping"), "\(error)")
        }
    }

    // MARK: - /metrics (item 3)

    @Test("/metrics labels a publish target by scheme, host and port and its index: no path, no credentials")
    func publishLabelsShowNoPath() {
        var camera = CameraReading(name: "door", stats: PipelineStats().snapshot(),
                                   status: SourceStatus(spec: "demo", name: "demo", state: .live))
        camera.publish = [PublishStatus(url: "rtmp://relay.local:1935/live/SECRETKEY"), PublishStatus(url: "rtsp://relay.local/cam?key=k")]
        let text = PrometheusText.render(server: ServerReading(), cameras: [camera], histograms: [])
        #expect(text.contains("sightline_publish_up{camera=\"door\",target=\"rtmp://relay.local:1935\",index=\"0\"} 0"), "\(text)")
        #expect(text.contains("sightline_publish_frames_total{camera=\"door\",target=\"rtsp://relay.local\",index=\"1\"} 0"), "\(text)")
        #expect(!text.contains("SECRETKEY") && !text.contains("/live") && !text.contains("key=k"))
        #expect(PublishTarget.location("rtmp://user:pw@host:1935/live/${KEY}") == "rtmp://host:1935")
    }
}

/// Log lines as text (message and metadata), for checking what reaches the log.
final class LogRecords: Sendable {
    private let stored = Locked<[String]>([])
    func append(_ line: String) { stored.withLock { $0.append(line) } }
    var lines: [String] { stored.withLock { $0 } }
}

struct RecordingLogHandler: LogHandler {
    let records: LogRecords
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String, file: String,
             function: String, line: UInt) {
        let all = self.metadata.merging(metadata ?? [:]) { $1 }
        records.append("\(message) " + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
    }
}

/// A stream that never opens, saying why with its URL in the error (as libavformat's failures do).
final class RefusingSource: FrameSource, @unchecked Sendable {
    let uri: String
    init(uri: String) { self.uri = uri }
    var name: String { SourceSpec.publicLocation(uri) }
    var pacing: SourcePacing { .device }
    func open() throws -> SourceFormat { throw SourceError.cannotOpen("\(uri): Connection refused") }
    func nextImage() throws -> CapturedImage { throw SourceError.vanished("closed") }
    func close() {}
}
