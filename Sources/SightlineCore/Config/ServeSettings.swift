import Foundation
import SightlineVision
import SightlineSupport
import SightlinePipeline
import SightlineHTTP
import SightlineEvents

/// Everything `serve` needs, resolved from defaults, the config file and
/// flags (in that order of precedence, flags last). Plain values only, kept
/// apart from runtime state.
public struct ServeSettings: Sendable {
    public var host = "127.0.0.1"
    public var port = 8080
    public var webRoot = "web"
    public var source = "auto"
    public var cameraWidth = 640
    public var cameraHeight = 480
    public var cameraFPS = 30.0
    public var demoTemplate = "config/demo-template.png"
    public var jpegQuality = 80
    /// The JPEG stream's widest (`video.jpegMaxWidth`): a wider frame is
    /// scaled down to it, proportions kept, before it is encoded for JPEG
    /// viewers, `/stream.mjpg` and snapshots (`?full=1` asks for the full
    /// picture; an MJPEG source's own JPEG goes as it is). 0: full size. Why 1280: `JPEGSizeRule`.
    public var jpegMaxWidth = JPEGSizeRule.defaultMaxWidth
    /// Threads OpenCV's own parallel loops may use (`OpenCVThreads`); 1 runs
    /// each call on the thread that makes it.
    public var opencvThreads = 1
    public var templateThreshold = TemplateMatcher.Options.defaultThreshold
    public var frameScale = TemplateMatcher.Options().frameScale
    /// Level where coarse hits are refined (nil: no refinement; `bench --refine-scale`).
    public var refineScale = TemplateMatcher.Options().refineScale
    public var templates: [String] = []
    /// Rotation search: ± this many degrees in `rotationStep` steps (0: off).
    public var rotationRange = 0.0
    public var rotationStep = 5.0
    /// Most places one template is reported at in a frame.
    public var maxInstances = 1
    public var dataDir = "data"
    public var token: String?
    public var logLevel = "info"
    public var debugStageDelayMs = 0.0
    /// Further sources offered in the browser's selector (GET /api/sources).
    public var offeredSources: [String] = []
    /// Folders whose files an admin may add as a camera or switch to (`media:`,
    /// `--media-dir`); the folders of the config's own files count too (`SourcePolicy`).
    public var mediaFolders: [String] = []
    /// Relays the H.264 stream is published to (`publish:`, `--publish`; PublishTarget).
    public var publish: [String] = []
    public var facesEnabled = true
    /// YuNet ONNX model; nil runs the Haar fallback.
    public var faceModel: String?
    public var maxFaces = 10
    /// Offer every this many frames to the face detector (tracks carry boxes between).
    public var faceDetectEvery = 1
    /// Only look for faces in this normalized rectangle.
    public var faceRegion: NormalizedBox?
    /// Frames larger than this (longest side, pixels) are analysed (templates,
    /// faces) on a copy scaled down to it; boxes stay normalized to the full
    /// picture. 0: every frame at its own size. Why 640: `AnalysisSize`.
    public var analysisSize = AnalysisSize.defaultLongSide
    /// YuNet: a second landmark pass on upscaled crops for an accurate roll
    /// (costs detection rate, not frames: detection runs beside the pipeline).
    public var faceRefineLandmarks = true
    /// Boxes move with the picture between passes (optical flow), not by their velocity.
    public var faceOpticalFlow = true
    /// Detection passes a second at most, and on a still scene or with nobody watching (FaceDetectionPolicy).
    public var faceMaxRate = 10.0
    public var faceIdleRate = 2.0
    /// Seconds between fine face passes (small and tilted faces; FaceDetectionPolicy); 0: only after cuts.
    public var faceFineEverySeconds = 1.0
    /// YuNet: each tracked face's landmarks are re-read at most this often (new faces at once).
    public var faceRefineEverySeconds = 0.1
    /// YuNet: side of a tracked face's refining crop (160-320, a multiple of
    /// 32): smaller is cheaper (a 320 crop costs 4 times a 160 one) and reads roll less well.
    public var faceRefineCropSize = 320
    /// Each tracked face's smile and eyes are read at most this often.
    public var faceAttributesEverySeconds = 0.25
    /// YuNet: the least score (0-1) a face needs to be reported.
    public var faceMinScore = 0.75

    /// Viewing without a credential: nil decides by the address (open on
    /// loopback, closed elsewhere); true/false force it (`access.view`).
    public var viewOpen: Bool?
    /// Origins besides the server's own that may open /ws and make changes.
    public var allowedOrigins: [String] = []
    /// Host names besides localhost and the loopback addresses a loopback-bound server answers to.
    public var allowedHosts: [String] = []
    public var sessionMinutes = 12 * 60.0
    /// Reverse proxies whose forwarded client address counts (`access.trustedProxies`; see `TrustedProxies`).
    public var trustedProxies: [String] = []
    /// TLS: PEM files, or `tlsAuto` for a self-signed certificate in <data-dir>/tls.
    public var tlsCert: String?
    public var tlsKey: String?
    public var tlsAuto = false
    /// Names this server in events and MQTT topics; nil: from the host name (`cameraName`).
    public var camera: String?
    public var events = EventSettings()
    public var record = RecordSettings()
    public var mqtt = MQTTSettings()
    /// H.264 on `/ws?video=h264` (config `video:`).
    public var video = VideoSettings()

    /// `cameras:` in the file's order; none: one camera from the settings above.
    public var cameras: [NamedCamera] = []
    /// This camera's name in routes (`/cam/NAME/...`, `/api/cameras/NAME/...`):
    /// set on each camera's own settings by `cameraSettings()`.
    public var routeName: String?

    /// One camera of `cameras:` and what it overrides.
    public struct NamedCamera: Sendable, Equatable {
        public var name: String
        public var overrides: SightlineConfig.Camera

        public init(name: String, overrides: SightlineConfig.Camera) {
            self.name = name
            self.overrides = overrides
        }
    }

    public init() {}

    /// Each camera's own settings, the first being the camera of the
    /// unprefixed routes. Without `cameras:`, one: these settings, named (in
    /// routes, events and topics) `cameraName` as before, on the data
    /// directory as before. With it, each camera's are these settings with
    /// its overrides over them (flags included: a flag sets the top level,
    /// which a camera's own value overrides), `camera` its key unless it
    /// names itself, and `<dataDir>/cameras/NAME` its data directory
    /// (templates, people, events, recordings). The token and TLS files stay
    /// in `dataDir`.
    public func cameraSettings() throws -> [ServeSettings] {
        guard !cameras.isEmpty else {
            var one = self
            one.routeName = cameraName
            return [one]
        }
        var seen = Set<String>()
        return try cameras.map { named in
            if let problem = Self.cameraNameProblem(named.name) { throw ConfigError.invalid("cameras: \(problem)") }
            guard seen.insert(named.name.lowercased()).inserted else {
                throw ConfigError.invalid("two cameras are named '\(named.name)' (names are compared ignoring case)")
            }
            var own = self
            own.cameras = []
            var config = SightlineConfig()
            config.source = named.overrides.source
            config.demo = named.overrides.demo
            config.templates = named.overrides.templates
            config.faces = named.overrides.faces
            config.analysis = named.overrides.analysis
            config.events = named.overrides.events
            config.publish = named.overrides.publish
            try own.apply(config)
            own.camera = named.overrides.camera ?? named.name
            own.routeName = named.name
            own.dataDir = (dataDir as NSString).appendingPathComponent("cameras/\(named.name)")
            // `mqtt` stays the top level's: every camera shares the server's one connection (`MQTTConnections`).
            return own
        }
    }

    /// The camera name events and topics use: `camera`, else the host name
    /// (up to its first dot) with anything but letters, digits, '-' and '_' as '-'.
    public var cameraName: String { camera ?? Self.hostCameraName() }

    public static func hostCameraName(_ host: String = ProcessInfo.processInfo.hostName) -> String {
        let short = host.split(separator: ".").first.map(String.init) ?? ""
        let cleaned = String(short.prefix(64).map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") ? $0 : "-" })
        return cleaned.isEmpty ? "sightline" : cleaned
    }

    /// 1-64 ASCII letters, digits, '-' or '_' (safe in topics, file names and
    /// Home Assistant ids), and none of `reservedCameraNames`.
    public static func isValidCameraName(_ name: String) -> Bool {
        cameraNameProblem(name) == nil
    }

    /// Why `name` cannot name a camera (in routes, events and topics), or nil.
    /// Names are compared ignoring case everywhere (`CameraRoster.key`), reserved ones too.
    public static func cameraNameProblem(_ name: String) -> String? {
        guard (1...64).contains(name.count),
              name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
            return "camera names are 1-64 letters, digits, '-' or '_', got '\(name)'"
        }
        guard !reservedCameraNames.contains(name.lowercased()) else {
            return "'\(name)' is reserved (a path the server answers, an MQTT topic of its own, or a Windows device name); "
                + "choose another camera name. Reserved, in any case: " + reservedCameraNames.sorted().joined(separator: ", ")
        }
        return nil
    }

    /// Names a camera may not have (lower case; compared ignoring case): the
    /// first path segments the server routes (`/api`, `/cam`, `/ws`, `/metrics`,
    /// `/healthz`, `/snapshot.jpg`, `/stream.mjpg`, `/index.html`), the server's own
    /// MQTT topics beside `<prefix>/<camera>/` (`available`, `events`, `stats`),
    /// and the device names Windows keeps in every folder (a camera's data
    /// directory copied there, or served by Samba).
    public static let reservedCameraNames: Set<String> = {
        var names: Set<String> = ["api", "cam", "ws", "metrics", "healthz", "snapshot", "stream", "index",
                                  "available", "events", "stats",
                                  "con", "prn", "aux", "nul"]
        for n in 0...9 { names.insert("com\(n)"); names.insert("lpt\(n)") }
        return names
    }()

    /// Whether `host` is a loopback address or name.
    public static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// Whether viewing needs no credential with these settings.
    public var viewingIsOpen: Bool { viewOpen ?? Self.isLoopback(host) }

    public var tlsEnabled: Bool { tlsAuto || tlsCert != nil }

    /// The matcher's options from these settings.
    public var matcherOptions: TemplateMatcher.Options {
        var options = TemplateMatcher.Options()
        options.frameScale = frameScale
        options.refineScale = refineScale
        options.angles = TemplateMatcher.Options.angles(range: rotationRange, step: rotationStep)
        options.maxInstances = maxInstances
        return options
    }

    /// Applies a config file's values over the current ones.
    public mutating func apply(_ config: SightlineConfig) throws {
        if let v = config.faces?.region, !v.isEmpty, v.count != 4 {
            throw ConfigError.invalid("faces.region must be [] or [x, y, w, h], got \(v.count) numbers")
        }
        if let v = config.server?.host { host = v }
        if let v = config.server?.port { port = v }
        if let v = config.server?.webRoot { webRoot = v }
        switch config.access?.view {
        case nil, "": break
        case "open": viewOpen = true
        case "token": viewOpen = false
        case let other?: throw ConfigError.invalid("access.view must be open or token, got '\(other)'")
        }
        if let v = config.access?.allowedOrigins { allowedOrigins = v }
        if let v = config.access?.allowedHosts { allowedHosts = v }
        if let v = config.access?.sessionMinutes { sessionMinutes = v }
        if let v = config.access?.trustedProxies { trustedProxies = v }
        if let v = config.tls?.auto { tlsAuto = v }
        if let v = config.tls?.cert, !v.isEmpty { tlsCert = v }
        if let v = config.tls?.key, !v.isEmpty { tlsKey = v }
        if let v = config.source?.spec { source = v }
        if let v = config.source?.width { cameraWidth = v }
        if let v = config.source?.height { cameraHeight = v }
        if let v = config.source?.fps { cameraFPS = v }
        if let v = config.demo?.template { demoTemplate = v }
        if let v = config.jpeg?.quality { jpegQuality = v }
        if let video = config.video {
            if let v = video.h264 { self.video.h264Enabled = v }
            if let v = video.preset { self.video.encoder.preset = v }
            if let v = video.crf { self.video.encoder.crf = v }
            if let v = video.bitrateKbps { self.video.encoder.bitrateKbps = v > 0 ? v : nil }
            if let v = video.keyframeSeconds { self.video.encoder.keyframeSeconds = v }
            if let v = video.threads { self.video.encoder.threads = v }
            if let v = video.x264Params { self.video.encoder.x264Params = v.isEmpty ? nil : v }
            if let v = video.low { self.video.lowEnabled = v }
            if let v = video.lowScale { self.video.lowScale = v }
            if let v = video.lowMaxFps { self.video.lowMaxFPS = v }
            if let v = video.lowKbps { self.video.lowBitrateKbps = v }
            if let v = video.maxLagSeconds { self.video.maxLagSeconds = v }
            if let v = video.passThrough { self.video.passThrough = v }
            if let v = video.jpegMaxWidth { jpegMaxWidth = v }
        }
        if let v = config.server?.opencvThreads { opencvThreads = v }
        if let v = config.templates?.threshold { templateThreshold = v }
        if let v = config.templates?.frameScale { frameScale = v }
        if let v = config.templates?.paths { templates = v }
        if let v = config.templates?.rotationRange { rotationRange = v }
        if let v = config.templates?.rotationStep { rotationStep = v }
        if let v = config.templates?.maxInstances { maxInstances = v }
        if let v = config.dataDir { dataDir = v }
        if let v = config.token, !v.isEmpty { token = v }
        if let v = config.logLevel { logLevel = v }
        if let v = config.source?.offer { offeredSources = v }
        if let v = config.publish { publish = v }
        if let v = config.media { mediaFolders = v }
        if let v = config.faces?.enabled { facesEnabled = v }
        if let v = config.faces?.model, !v.isEmpty { faceModel = v }
        if let v = config.faces?.maxFaces { maxFaces = v }
        if let v = config.faces?.detectEvery { faceDetectEvery = v }
        if let v = config.faces?.refineLandmarks { faceRefineLandmarks = v }
        if let v = config.faces?.opticalFlow { faceOpticalFlow = v }
        if let v = config.faces?.maxRate { faceMaxRate = v }
        if let v = config.faces?.idleRate { faceIdleRate = v }
        if let v = config.faces?.fineEverySeconds { faceFineEverySeconds = v }
        if let v = config.faces?.refineEverySeconds { faceRefineEverySeconds = v }
        if let v = config.faces?.refineCropSize { faceRefineCropSize = v }
        if let v = config.faces?.attributesEverySeconds { faceAttributesEverySeconds = v }
        if let v = config.faces?.minScore { faceMinScore = v }
        if let v = config.analysis?.size { analysisSize = v }
        if let v = config.faces?.region, v.count == 4 { faceRegion = NormalizedBox(x: v[0], y: v[1], w: v[2], h: v[3]) }
        if let v = config.camera, !v.isEmpty { camera = v }
        if let map = config.cameras {
            cameras = config.cameraOrder.compactMap { name in map[name].map { NamedCamera(name: name, overrides: $0) } }
        }
        if let r = config.record {
            if let v = r.enabled { record.enabled = v }
            if let v = r.segmentSeconds { record.segmentSeconds = v }
            if let v = r.maxAgeHours { record.maxAgeHours = v }
            if let v = r.maxGigabytes { record.maxGigabytes = v }
        }
        if let e = config.events {
            if let v = e.enabled { events.enabled = v }
            if let v = e.minSeconds { events.minSeconds = v }
            if let v = e.endAfterSeconds { events.endAfterSeconds = v }
            if let v = e.updateSeconds { events.updateSeconds = v }
            if let v = e.minUpdateSeconds { events.minUpdateSeconds = v }
            if let v = e.maxEvents { events.maxEvents = v }
            if let v = e.maxAgeDays { events.maxAgeDays = v }
            if let v = e.maxMegabytes { events.maxMegabytes = v }
            if let v = e.clips { events.clips = v }
            if let v = e.preCaptureSeconds { events.preCaptureSeconds = v }
            if let v = e.postCaptureSeconds { events.postCaptureSeconds = v }
            if let v = e.maxClipSeconds { events.maxClipSeconds = v }
        }
        if let m = config.mqtt {
            func text(_ value: String?) -> String? { value.flatMap { $0.isEmpty ? nil : $0 } }
            if let v = m.host { mqtt.host = v }
            if let v = m.port { mqtt.port = v }
            if let v = text(m.username) { mqtt.username = v }
            if let v = text(m.password) { mqtt.password = v }
            if let v = text(m.caFile) { mqtt.caFile = v }
            if let v = text(m.certFile) { mqtt.certFile = v }
            if let v = text(m.keyFile) { mqtt.keyFile = v }
            if let v = text(m.clientId) { mqtt.clientId = v }
            if let v = text(m.topicPrefix) { mqtt.topicPrefix = v }
            if let v = m.keepalive { mqtt.keepalive = v }
            if let v = m.queueLimit { mqtt.queueLimit = v }
            if let v = m.reconnectMaxSeconds { mqtt.reconnectMaxSeconds = v }
            if let v = m.statsSeconds { mqtt.statsSeconds = v }
            if let v = m.homeAssistant { mqtt.homeAssistant = v }
            if let v = text(m.discoveryPrefix) { mqtt.discoveryPrefix = v }
        }
    }

    /// Checks ranges; the message names the setting.
    public func validate() throws {
        // 0: any free port, chosen when the server binds and logged ("serving url=...").
        guard (0...65535).contains(port) else { throw ConfigError.invalid("port must be 0-65535 (0: any free port), got \(port)") }
        guard (1...64).contains(opencvThreads) else {
            throw ConfigError.invalid("server.opencvThreads must be 1-64, got \(opencvThreads)")
        }
        guard (1...100).contains(jpegQuality) else { throw ConfigError.invalid("jpeg quality must be 1-100, got \(jpegQuality)") }
        guard jpegMaxWidth == 0 || (160...16384).contains(jpegMaxWidth) else {
            throw ConfigError.invalid("video.jpegMaxWidth must be 0 (full size) or 160-16384, got \(jpegMaxWidth)")
        }
        try video.validate()
        guard (0.0...1.0).contains(templateThreshold) else {
            throw ConfigError.invalid("templates.threshold must be 0-1, got \(templateThreshold)")
        }
        guard frameScale > 0.05 && frameScale <= 1 else {
            throw ConfigError.invalid("templates.frameScale must be in (0.05, 1], got \(frameScale)")
        }
        guard (0...45).contains(rotationRange), rotationStep >= 1, rotationStep <= 45 else {
            throw ConfigError.invalid("templates.rotationRange must be 0-45 and rotationStep 1-45 degrees")
        }
        guard (1...20).contains(maxInstances) else { throw ConfigError.invalid("templates.maxInstances must be 1-20") }
        guard cameraWidth > 0, cameraHeight > 0, cameraFPS > 0 else {
            throw ConfigError.invalid("source width, height and fps must be positive")
        }
        guard (tlsCert == nil) == (tlsKey == nil) else {
            throw ConfigError.invalid("tls needs both a certificate and a key (--tls-cert and --tls-key)")
        }
        guard sessionMinutes > 0 else { throw ConfigError.invalid("access.sessionMinutes must be positive") }
        do { _ = try TrustedProxies(trustedProxies) } catch { throw ConfigError.invalid("\(error)") }
        guard debugStageDelayMs >= 0 else { throw ConfigError.invalid("--debug-stage-delay-ms must be >= 0") }
        _ = try SourceSpec.parse(source)
        for offered in offeredSources { _ = try SourceSpec.parse(offered) }
        try checkNotSelf()
        for target in publish { _ = try PublishTarget.parse(target, environment: ProcessInfo.processInfo.environment) }
        if !publish.isEmpty && !video.h264Enabled {
            throw ConfigError.invalid("publish needs H.264: video.h264 is false")
        }
        guard (1...100).contains(maxFaces) else { throw ConfigError.invalid("faces.maxFaces must be 1-100, got \(maxFaces)") }
        guard analysisSize == 0 || (160...8192).contains(analysisSize) else {
            throw ConfigError.invalid("analysis.size must be 0 (each frame at its own size) or 160-8192, got \(analysisSize)")
        }
        guard (1...30).contains(faceDetectEvery) else {
            throw ConfigError.invalid("faces.detectEvery must be 1 to 30, got \(faceDetectEvery)")
        }
        guard faceMaxRate > 0, faceMaxRate <= 100 else {
            throw ConfigError.invalid("faces.maxRate must be more than 0 and at most 100 passes a second, got \(faceMaxRate)")
        }
        guard faceIdleRate > 0, faceIdleRate <= faceMaxRate else {
            throw ConfigError.invalid("faces.idleRate must be more than 0 and at most faces.maxRate, got \(faceIdleRate)")
        }
        guard faceFineEverySeconds == 0 || (0.2...60).contains(faceFineEverySeconds) else {
            throw ConfigError.invalid("faces.fineEverySeconds must be 0 (only after cuts) or 0.2 to 60, got \(faceFineEverySeconds)")
        }
        guard faceAttributesEverySeconds >= 0, faceAttributesEverySeconds <= 60 else {
            throw ConfigError.invalid("faces.attributesEverySeconds must be 0 to 60, got \(faceAttributesEverySeconds)")
        }
        guard faceMinScore > 0, faceMinScore < 1 else {
            throw ConfigError.invalid("faces.minScore must be more than 0 and less than 1, got \(faceMinScore)")
        }
        guard faceRefineEverySeconds >= 0, faceRefineEverySeconds <= 60 else {
            throw ConfigError.invalid("faces.refineEverySeconds must be 0 to 60, got \(faceRefineEverySeconds)")
        }
        guard (160...320).contains(faceRefineCropSize), faceRefineCropSize % 32 == 0 else {
            throw ConfigError.invalid("faces.refineCropSize must be 160, 192, 224, 256, 288 or 320, got \(faceRefineCropSize)")
        }
        if let camera, let problem = Self.cameraNameProblem(camera) {
            throw ConfigError.invalid("camera (its name in events and MQTT): \(problem)")
        }
        try events.validate()
        try record.validate()
        if let options = mqtt.options(camera: cameraName) { try options.validate() }
        if let r = faceRegion, !(r.x >= 0 && r.y >= 0 && r.w > 0 && r.h > 0 && r.x + r.w <= 1.0001 && r.y + r.h <= 1.0001) {
            throw ConfigError.invalid("faces.region must be [x, y, w, h] inside [0, 1], got \([r.x, r.y, r.w, r.h])")
        }
    }
}
