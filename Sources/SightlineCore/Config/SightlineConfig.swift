import Foundation
import SightlineSupport
import Yams
import SightlineVision
import SightlinePipeline
import SightlineHTTP
import SightlineEvents

/// The configuration file (config/sightline.yaml), as written by people.
/// Every field is optional; what is missing keeps its default. Unknown keys
/// are refused so a typo does not silently do nothing.
public struct SightlineConfig: Codable, Sendable, Equatable {
    public struct Server: Codable, Sendable, Equatable {
        public var host: String?
        public var port: Int?
        public var webRoot: String?
        public var opencvThreads: Int?
    }

    /// `source:` as a mapping (`{spec: ..., width: ...}`) or, as Frigate and
    /// go2rtc users write it, the spec alone (`source: "rtsp://..."`; decoded
    /// in the extension at the end, which keeps the memberwise init).
    public struct Source: Codable, Sendable, Equatable {
        public var spec: String?
        public var width: Int?
        public var height: Int?
        public var fps: Double?
        public var offer: [String]?
    }

    public struct Faces: Codable, Sendable, Equatable {
        public var enabled: Bool?
        public var model: String?
        public var maxFaces: Int?
        public var detectEvery: Int?
        public var region: [Double]?
        public var refineLandmarks: Bool?
        public var opticalFlow: Bool?
        public var maxRate: Double?
        public var idleRate: Double?
        public var fineEverySeconds: Double?
        public var refineEverySeconds: Double?
        public var refineCropSize: Int?
        public var attributesEverySeconds: Double?
        public var minScore: Double?
    }

    public struct Demo: Codable, Sendable, Equatable {
        public var template: String?
    }

    public struct JPEG: Codable, Sendable, Equatable {
        public var quality: Int?
    }

    /// The size frames are analysed at (`AnalysisSize`).
    public struct Analysis: Codable, Sendable, Equatable {
        /// Longest side of the analysed copy, pixels (0: every frame at its own size).
        public var size: Int?
    }

    public struct Templates: Codable, Sendable, Equatable {
        public var threshold: Double?
        public var frameScale: Double?
        public var paths: [String]?
        public var rotationRange: Double?
        public var rotationStep: Double?
        public var maxInstances: Int?
    }

    public struct Access: Codable, Sendable, Equatable {
        /// "open" (anyone may view) or "token" (viewing needs a credential);
        /// unset: open on loopback, token elsewhere.
        public var view: String?
        public var allowedOrigins: [String]?
        public var allowedHosts: [String]?
        /// Minutes a sign-in cookie lasts.
        public var sessionMinutes: Double?
        /// Reverse proxies (addresses, CIDR blocks) whose X-Forwarded-For/Forwarded name the client.
        public var trustedProxies: [String]?
    }

    public struct TLS: Codable, Sendable, Equatable {
        /// true: a self-signed certificate made in <data-dir>/tls at first start.
        public var auto: Bool?
        public var cert: String?
        public var key: String?
    }

    /// Events and their snapshots in <data-dir>/events.
    public struct Events: Codable, Sendable, Equatable {
        public var enabled: Bool?
        public var minSeconds: Double?
        public var endAfterSeconds: Double?
        public var updateSeconds: Double?
        public var minUpdateSeconds: Double?
        public var maxEvents: Int?
        public var maxAgeDays: Double?
        public var maxMegabytes: Double?
        public var clips: Bool?
        public var preCaptureSeconds: Double?
        public var postCaptureSeconds: Double?
        public var maxClipSeconds: Double?
    }

    /// Continuous recording: see RecordSettings.
    public struct Record: Codable, Sendable, Equatable {
        public var enabled: Bool?
        public var segmentSeconds: Double?
        public var maxAgeHours: Double?
        public var maxGigabytes: Double?
    }

    /// The MQTT broker (off while host is empty) and Home Assistant discovery.
    public struct MQTT: Codable, Sendable, Equatable {
        public var host: String?
        public var port: Int?
        public var username: String?
        public var password: String?
        public var caFile: String?
        public var certFile: String?
        public var keyFile: String?
        public var clientId: String?
        public var topicPrefix: String?
        public var keepalive: Int?
        public var queueLimit: Int?
        public var reconnectMaxSeconds: Double?
        public var statsSeconds: Double?
        public var homeAssistant: Bool?
        public var discoveryPrefix: String?
    }

    /// H.264 (`/ws?video=h264`): see VideoSettings; and the JPEG stream's size (`jpegMaxWidth`: see ServeSettings).
    public struct Video: Codable, Sendable, Equatable {
        public var h264: Bool?
        public var preset: String?
        public var crf: Int?
        public var bitrateKbps: Int?
        public var keyframeSeconds: Double?
        public var threads: Int?
        public var x264Params: String?
        public var low: Bool?
        public var lowScale: Double?
        public var lowMaxFps: Double?
        public var lowKbps: Int?
        public var maxLagSeconds: Double?
        public var passThrough: Bool?
        public var jpegMaxWidth: Int?
    }

    /// One camera of `cameras:`: what it overrides of the top level's
    /// settings (each key as at the top level; missing ones keep the top
    /// level's). `camera` names it in events and MQTT topics (default: its key).
    /// A camera may also be its source spec alone (`front: "rtsp://..."`, as go2rtc's `streams:`).
    public struct Camera: Codable, Sendable, Equatable {
        public var source: Source?
        public var demo: Demo?
        public var templates: Templates?
        public var faces: Faces?
        public var analysis: Analysis?
        public var events: Events?
        public var publish: [String]?
        public var camera: String?
    }

    /// Named cameras, each its own graph, routes (`/cam/NAME/...`) and data
    /// subdirectory (`<dataDir>/cameras/NAME`); none: one camera from the top level.
    public var cameras: [String: Camera]?
    /// The keys of `cameras` in the file's order (the first is the camera of the unprefixed routes).
    public var cameraOrder: [String] = []

    private enum CodingKeys: String, CodingKey {
        case server, video, publish, camera, events, record, mqtt, access, tls, source, demo, jpeg, templates, faces, analysis,
             dataDir, token, logLevel, cameras, media
    }

    public var server: Server?
    public var video: Video?
    /// rtsp:// and rtmp:// relays the H.264 stream is published to.
    public var publish: [String]?
    /// Names this server in events and MQTT topics (default: the host name).
    public var camera: String?
    public var events: Events?
    public var record: Record?
    public var mqtt: MQTT?
    public var access: Access?
    public var tls: TLS?
    public var source: Source?
    public var demo: Demo?
    public var jpeg: JPEG?
    public var templates: Templates?
    public var faces: Faces?
    public var analysis: Analysis?
    public var dataDir: String?
    /// Folders whose files admins may add or switch to at runtime (`SourcePolicy`).
    public var media: [String]?
    public var token: String?
    public var logLevel: String?

    public init() {}

    static let knownKeys: [String: Set<String>] = [
        "": ["server", "access", "tls", "source", "demo", "jpeg", "templates", "faces", "analysis", "dataDir", "token",
             "logLevel", "camera", "events", "mqtt", "video", "publish", "record", "cameras", "media"],
        "record": ["enabled", "segmentSeconds", "maxAgeHours", "maxGigabytes"],
        "video": ["h264", "preset", "crf", "bitrateKbps", "keyframeSeconds", "threads", "x264Params", "low", "lowScale", "lowMaxFps",
                  "lowKbps", "maxLagSeconds", "passThrough", "jpegMaxWidth"],
        "events": ["enabled", "minSeconds", "endAfterSeconds", "updateSeconds", "minUpdateSeconds", "maxEvents",
                   "maxAgeDays", "maxMegabytes", "clips", "preCaptureSeconds", "postCaptureSeconds", "maxClipSeconds"],
        "mqtt": ["host", "port", "username", "password", "caFile", "certFile", "keyFile", "clientId", "topicPrefix",
                 "keepalive", "queueLimit", "reconnectMaxSeconds", "statsSeconds", "homeAssistant", "discoveryPrefix"],
        "access": ["view", "allowedOrigins", "allowedHosts", "sessionMinutes", "trustedProxies"],
        "tls": ["auto", "cert", "key"],
        "server": ["host", "port", "webRoot", "opencvThreads"],
        "source": ["spec", "width", "height", "fps", "offer"],
        "faces": ["enabled", "model", "maxFaces", "detectEvery", "region", "refineLandmarks", "opticalFlow", "maxRate", "idleRate",
                  "fineEverySeconds",
                  "refineEverySeconds", "refineCropSize", "attributesEverySeconds", "minScore"],
        "demo": ["template"],
        "analysis": ["size"],
        "jpeg": ["quality"],
        "templates": ["threshold", "frameScale", "paths", "rotationRange", "rotationStep", "maxInstances"],
    ]

    /// What a camera of `cameras:` may set.
    static let cameraKeys: Set<String> = ["source", "demo", "templates", "faces", "analysis", "events", "publish", "camera"]

    /// Parses YAML text; `origin` names the file in errors.
    public static func parse(_ text: String, origin: String) throws -> SightlineConfig {
        let tree: Any?
        do {
            tree = try Yams.load(yaml: text)
        } catch {
            throw ConfigError.malformed(origin, "\(error)")
        }
        guard let tree else { return SightlineConfig() }
        guard let root = tree as? [String: Any] else {
            throw ConfigError.malformed(origin, "the top level must be a mapping of keys to values")
        }
        try checkKeys(root, section: "", origin: origin)
        if let cameras = root["cameras"], !(cameras is NSNull) {
            guard let map = cameras as? [String: Any], !map.isEmpty else {
                throw ConfigError.malformed(origin, "'cameras' must be a mapping of camera names to their settings")
            }
            for (name, value) in map {
                guard let camera = value as? [String: Any] else {
                    if value is NSNull || value is String { continue }
                    throw ConfigError.malformed(origin, "cameras.\(name) must be a mapping, or a source spec string")
                }
                for (key, sub) in camera {
                    guard cameraKeys.contains(key) else {
                        throw ConfigError.malformed(origin, "unknown key '\(key)' in cameras.\(name); known: "
                                                    + cameraKeys.sorted().joined(separator: ", "))
                    }
                    if let sub = sub as? [String: Any] { try checkKeys(sub, section: key, origin: origin) }
                }
            }
        }
        do {
            var config = try YAMLDecoder().decode(SightlineConfig.self, from: text)
            if config.cameras != nil {
                // The file's order: a decoded dictionary has none.
                let node = try Yams.compose(yaml: text)
                config.cameraOrder = node?.mapping?["cameras"]?.mapping?.keys.compactMap(\.string) ?? []
            }
            return config
        } catch let DecodingError.typeMismatch(type, context) {
            throw ConfigError.malformed(origin, "\(path(context.codingPath)) should be \(type)")
        } catch let DecodingError.dataCorrupted(context) {
            throw ConfigError.malformed(origin, "\(path(context.codingPath)): \(context.debugDescription)")
        } catch {
            throw ConfigError.malformed(origin, "\(error)")
        }
    }

    public static func load(path: String) throws -> SightlineConfig {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigError.unreadable(path)
        }
        return try parse(String(decoding: data, as: UTF8.self), origin: path)
    }

    private static func checkKeys(_ map: [String: Any], section: String, origin: String) throws {
        guard let known = knownKeys[section] else { return }
        for (key, value) in map {
            guard known.contains(key) else {
                let place = section.isEmpty ? "the top level" : "'\(section)'"
                throw ConfigError.malformed(origin, "unknown key '\(key)' in \(place); known: \(known.sorted().joined(separator: ", "))")
            }
            if section.isEmpty, knownKeys[key] != nil {
                guard let sub = value as? [String: Any] else {
                    if value is NSNull || (key == "source" && value is String) { continue }
                    throw ConfigError.malformed(origin, key == "source" ? "'source' must be a spec string or a mapping"
                                                : "'\(key)' must be a mapping")
                }
                try checkKeys(sub, section: key, origin: origin)
            }
        }
    }

    private static func path(_ keys: [CodingKey]) -> String {
        keys.map(\.stringValue).joined(separator: ".")
    }
}


extension SightlineConfig.Source {
    /// A string is the spec (`source: "rtsp://cam.local/live"`); a mapping has the keys above.
    public init(from decoder: any Decoder) throws {
        if let spec = try? decoder.singleValueContainer().decode(String.self) {
            self.init(spec: spec)
            return
        }
        let keys = try decoder.container(keyedBy: CodingKeys.self)
        self.init(spec: try keys.decodeIfPresent(String.self, forKey: .spec),
                  width: try keys.decodeIfPresent(Int.self, forKey: .width),
                  height: try keys.decodeIfPresent(Int.self, forKey: .height),
                  fps: try keys.decodeIfPresent(Double.self, forKey: .fps),
                  offer: try keys.decodeIfPresent([String].self, forKey: .offer))
    }
}

extension SightlineConfig.Camera {
    /// A string is the camera's source spec (`front: "rtsp://..."`); a mapping has the keys above.
    public init(from decoder: any Decoder) throws {
        if let spec = try? decoder.singleValueContainer().decode(String.self) {
            self.init(source: SightlineConfig.Source(spec: spec))
            return
        }
        let keys = try decoder.container(keyedBy: CodingKeys.self)
        self.init(source: try keys.decodeIfPresent(SightlineConfig.Source.self, forKey: .source),
                  demo: try keys.decodeIfPresent(SightlineConfig.Demo.self, forKey: .demo),
                  templates: try keys.decodeIfPresent(SightlineConfig.Templates.self, forKey: .templates),
                  faces: try keys.decodeIfPresent(SightlineConfig.Faces.self, forKey: .faces),
                  analysis: try keys.decodeIfPresent(SightlineConfig.Analysis.self, forKey: .analysis),
                  events: try keys.decodeIfPresent(SightlineConfig.Events.self, forKey: .events),
                  publish: try keys.decodeIfPresent([String].self, forKey: .publish),
                  camera: try keys.decodeIfPresent(String.self, forKey: .camera))
    }
}
