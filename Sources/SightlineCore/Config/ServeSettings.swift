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

    /// One camera of `cameras:` and what it overrides (the values the config gives it).
    public struct NamedCamera: Sendable {
        public var name: String
        public var overrides: [SettingAssignment]

        public init(name: String, overrides: [SettingAssignment]) {
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
            // Its name (its key unless it names itself), then what it sets over the top level's.
            own.camera = named.name
            for setting in named.overrides { setting.apply(to: &own) }
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

    /// Applies a config file's values over the current ones (each already
    /// read and type-checked against `SettingsCatalog`), and its cameras.
    public mutating func apply(_ config: SightlineConfig) throws {
        for setting in config.settings { setting.apply(to: &self) }
        if let named = config.cameras {
            cameras = named.map { NamedCamera(name: $0.name, overrides: $0.settings) }
        }
    }

    /// Checks each setting's rule (`SettingsCatalog`: "KEY must be ..., got
    /// VALUE"), then what holds between settings.
    public func validate() throws {
        for definition in SettingsCatalog.all {
            if let problem = definition.problem(in: self) { throw ConfigError.invalid(problem) }
        }
        guard faceIdleRate <= faceMaxRate else {
            throw ConfigError.invalid("faces.idleRate must be more than 0 and at most faces.maxRate, got \(faceIdleRate)")
        }
        guard events.updateSeconds >= events.minUpdateSeconds else {
            throw ConfigError.invalid("events.minUpdateSeconds must be at least 0.1 and events.updateSeconds between it and 3600")
        }
        guard (tlsCert == nil) == (tlsKey == nil) else {
            throw ConfigError.invalid("tls needs both a certificate and a key (--tls-cert and --tls-key)")
        }
        do { _ = try TrustedProxies(trustedProxies) } catch { throw ConfigError.invalid("\(error)") }
        guard debugStageDelayMs >= 0 else { throw ConfigError.invalid("--debug-stage-delay-ms must be >= 0") }
        _ = try SourceSpec.parse(source)
        for offered in offeredSources { _ = try SourceSpec.parse(offered) }
        try checkNotSelf()
        for target in publish { _ = try PublishTarget.parse(target, environment: ProcessInfo.processInfo.environment) }
        if !publish.isEmpty && !video.h264Enabled {
            throw ConfigError.invalid("publish needs H.264: video.h264 is false")
        }
        if let camera, let problem = Self.cameraNameProblem(camera) {
            throw ConfigError.invalid("camera (its name in events and MQTT): \(problem)")
        }
        if let options = mqtt.options(camera: cameraName) { try options.validate() }
    }
}
