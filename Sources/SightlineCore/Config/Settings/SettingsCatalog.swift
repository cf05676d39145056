import Foundation
import SightlineVision
import SightlinePipeline

/// Every setting, once: its key, type, default (a fresh `ServerSettings`'
/// or `CameraSettings`' own), scope (which of the two its key path is
/// into), flag, doc line and rule. The config file is read against
/// this list (`SightlineConfig`), `serve`'s setting flags are applied from it,
/// `ServeSettings.validate` checks its rules, and `sightline config-reference`
/// prints it as docs/configuration.md's table.
///
/// Scope: what `cameras:` allowed a camera before this list (its source,
/// demo, templates, faces, analysis, events, publish and name) is `.camera`;
/// the rest (listening, access, TLS, data directory, logging, media folders,
/// JPEG and H.264 encoding, recording, MQTT, OpenCV's threads) is the
/// server's. Adding a setting: one entry here, plus the property it sets and
/// the code that uses it.
public enum SettingsCatalog {
    public static let all: [SettingDefinition] = Array([
        serverSettings, sourceSettings, demoSettings, jpegSettings, videoSettings, analysisSettings,
        templatesSettings, facesSettings, cameraNameSettings, eventsSettings, recordSettings, mqttSettings,
        accessSettings, dataDirSettings, tlsSettings, publishSettings,
    ].joined())

    private static let serverSettings: [SettingDefinition] = [
        .value("server.host", \.host, flag: "host",
               "address to listen on; 0.0.0.0 to let other machines watch"),
        .value("server.port", \.port, flag: "port", rule: .within(0...65535, "0: any free port"),
               "port to listen on; 0: any free port, logged at start"),
        .value("server.webRoot", \.webRoot, flag: "web-root", "the browser client's files"),
        .value("server.opencvThreads", \.opencvThreads, flag: "opencv-threads", rule: .within(1...64),
               "threads for OpenCV's own loops; 1 runs each call on the stage's thread (TBB's idle workers spin between short loops: 0.04 cores here)"),
    ]

    private static let sourceSettings: [SettingDefinition] = [
        .value("source.spec", \.source, flag: "source",
               "auto | demo[?size=WxH&fps=N&seed=N] | v4l2:/dev/videoN | file:PATH[?pace=native|max] | rtsp://... | http://...; `source:` may also be the spec alone"),
        .value("source.width", \.cameraWidth, rule: .positive, "width asked of a V4L2 camera"),
        .value("source.height", \.cameraHeight, rule: .positive, "height asked of a V4L2 camera"),
        .value("source.fps", \.cameraFPS, rule: .positive, "frame rate asked of a V4L2 camera"),
        .value("source.offer", \.offeredSources, flag: "offer-source", use: .adds,
               "more sources for the browser's selector (cameras found and the demo are always offered)"),
    ]

    private static let demoSettings: [SettingDefinition] = [
        .value("demo.template", \.demoTemplate, "the picture the demo scene moves around"),
    ]

    private static let jpegSettings: [SettingDefinition] = [
        .value("jpeg.quality", \.jpegQuality, flag: "quality", rule: .within(1...100), "JPEG quality (4:2:0 subsampling)"),
    ]

    private static let videoSettings: [SettingDefinition] = [
        .value("video.h264", \.video.h264Enabled, "false: /ws?video=h264 is refused (400) and nothing is ever encoded"),
        .value("video.preset", \.video.encoder.preset,
               rule: .oneOf(["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow", "placebo"]),
               "x264 preset (veryfast: ~5 ms a 640x480 frame on one core)"),
        .value("video.crf", \.video.encoder.crf, rule: .within(0...51),
               "constant quality, lower is better (used while bitrateKbps is 0)"),
        .mapped("video.bitrateKbps", \.video.encoder.bitrateKbps, rule: .zeroOr(50...200_000, "crf"),
                read: { (kbps: Int) in .set(kbps > 0 ? kbps : nil) }, show: { $0 ?? 0 },
                "an average bitrate instead of crf (one-second VBV buffer); 0: crf"),
        .value("video.keyframeSeconds", \.video.encoder.keyframeSeconds, rule: .within(0.1...60),
               "seconds between keyframes when no viewer asks for one"),
        .value("video.threads", \.video.encoder.threads, rule: .within(1...16), "x264 threads (more: one slice per thread)"),
        .mapped("video.x264Params", \.video.encoder.x264Params,
                read: { (text: String) in .set(text.isEmpty ? nil : text) }, show: { $0 ?? "" },
                "more x264 options (key=value:key=value); the default skips veryfast's 8x8 inter partition search: 10-25 % less time, 1-3 % more bytes"),
        .value("video.low", \.video.lowEnabled, "a smaller rendition for viewers whose link cannot carry the main one"),
        .value("video.lowScale", \.video.lowScale, rule: .above(0.1, atMost: 1), "the low rendition: this fraction of each side"),
        .value("video.lowMaxFps", \.video.lowMaxFPS, rule: .within(1...120), "the low rendition: at most this many frames a second"),
        .value("video.lowKbps", \.video.lowBitrateKbps, rule: .within(50...200_000), "the low rendition's average bitrate"),
        .value("video.maxLagSeconds", \.video.maxLagSeconds, rule: .within(0.1...10),
               "a viewer further behind than this is moved ahead to the next keyframe"),
        .value("video.passThrough", \.video.passThrough,
               "a camera's own H.264 (and MJPEG) goes out as it came, boxes in SEI; false: encoded here"),
        .value("video.jpegMaxWidth", \.jpegMaxWidth, flag: "jpeg-max-width", rule: .zeroOr(160...16384, "full size"),
               "JPEG viewers, /stream.mjpg and snapshots get a wider frame scaled down to this width (proportions kept; ?full=1 asks for the full picture); 0: full size. An MJPEG source's own JPEG goes out as it is"),
    ]

    private static let analysisSettings: [SettingDefinition] = [
        .value("analysis.size", \.analysisSize, flag: "analysis-size", rule: .zeroOr(160...8192, "each frame at its own size"),
               "a frame whose longest side is above this is analysed on a copy scaled down to it (boxes stay normalized to the full picture); 640 is the most any frame-wide face pass reads; 0: every frame at its own size"),
    ]

    private static let templatesSettings: [SettingDefinition] = [
        .value("templates.threshold", \.templateThreshold, rule: .within(0...1), "default acceptance score (TM_CCOEFF_NORMED)"),
        .value("templates.frameScale", \.frameScale, rule: .above(0.05, atMost: 1),
               "coarse search on the frame shrunk by this"),
        .mapped("templates.refineScale", \.refineScale, rule: .zeroOr(0.05...1, "no refinement"),
                read: { (scale: Double) in .set(scale > 0 ? scale : nil) }, show: { $0 ?? 0 },
                "coarse hits are refined on the frame shrunk by this (above frameScale); 0: no refinement (faster, boxes less exact)"),
        .value("templates.paths", \.templates, flag: "template",
               "template images PATH[=NAME], loaded at start; the flag (repeatable) replaces the config's list"),
        .value("templates.rotationRange", \.rotationRange, rule: .within(0...45),
               "also try templates turned up to ± this many degrees (0: off)"),
        .value("templates.rotationStep", \.rotationStep, rule: .within(1...45),
               "... in steps of this many degrees (each angle costs a search)"),
        .value("templates.maxInstances", \.maxInstances, rule: .within(1...20), "most places one template is reported at per frame"),
    ]

    private static let facesSettings: [SettingDefinition] = [
        .value("faces.enabled", \.facesEnabled, flag: "no-faces", use: .turnsOff, "look for faces; false: no face detection, no face passes"),
        .mapped("faces.model", \.faceModel, flag: "face-model",
                read: { (path: String) in path.isEmpty ? .keep : .set(path) }, show: { $0 ?? "" },
                "a YuNet ONNX file, or haar for the Haar cascades; also env SIGHTLINE_FACE_MODEL (the flag, then the environment, then the config); empty: the shipped models/face_detection_yunet_2023mar_320.onnx"),
        .value("faces.runtime", \.faceRuntime, rule: .oneOf(YuNetRuntime.allCases.map(\.rawValue)),
               "what runs the YuNet network: onnxruntime (about 3x faster; scripts/setup.sh installs it from PyPI), opencv (OpenCV's dnn), or auto: onnxruntime when installed, else opencv; /api/state faces.runtime says which runs"),
        .value("faces.maxFaces", \.maxFaces, flag: "max-faces", rule: .within(1...100), "most faces reported per frame"),
        .value("faces.detectEvery", \.faceDetectEvery, rule: .within(1...30),
               "offer every Nth frame to the face detector, which runs beside the pipeline on the newest frame when free; tracks carry boxes between"),
        .mapped("faces.region", \.faceRegion,
                rule: SettingRule<[Double]>("[x, y, w, h] inside [0, 1]") { box in
                    box.isEmpty || (box.count == 4 && box[0] >= 0 && box[1] >= 0 && box[2] > 0 && box[3] > 0
                                    && box[0] + box[2] <= 1.0001 && box[1] + box[3] <= 1.0001)
                },
                read: { (box: [Double]) in
                    box.isEmpty ? .keep : box.count == 4 ? .set(NormalizedBox(x: box[0], y: box[1], w: box[2], h: box[3]))
                        : .refuse("[] or [x, y, w, h]")
                },
                show: { region in region.map { [$0.x, $0.y, $0.w, $0.h] } ?? [] },
                "[x, y, w, h] normalized: only look for faces there"),
        .value("faces.refineLandmarks", \.faceRefineLandmarks,
               "YuNet: second landmark pass for an accurate roll (slower detection, same frame rate: detection runs beside the pipeline)"),
        .value("faces.opticalFlow", \.faceOpticalFlow,
               "between passes each face's box, landmarks and roll move with the picture under it (Lucas-Kanade flow); false: by their velocity and roll rate"),
        .value("faces.maxRate", \.faceMaxRate, rule: .above(0, atMost: 100),
               "detection passes a second at most, while faces are tracked or the picture changes; the tracker carries every face on the frames between"),
        .value("faces.idleRate", \.faceIdleRate, rule: .positive,
               "passes a second (at most faces.maxRate) on a still scene with no face, and while nobody consumes faces live; /api/state faces.mode says which pace runs"),
        .value("faces.fineEverySeconds", \.faceFineEverySeconds, rule: .zeroOr(0.2...60, "only after cuts"),
               "one pass in this many seconds looks at the frame at 640 px turned 0, +30 or -30 degrees in turn (3 times further apart while nobody watches faces live); so do the 2nd-4th passes after a cut; 0: only after cuts"),
        .value("faces.refineEverySeconds", \.faceRefineEverySeconds, rule: .within(0...60),
               "a tracked face's landmarks re-read at most this often; a new face's at once"),
        .value("faces.refineCropSize", \.faceRefineCropSize, rule: .oneOf([160, 192, 224, 256, 288, 320]),
               "side of that crop: 224 halves the cost of re-reading, 160 quarters it, each reading roll less well ([faces.md](faces.md#faces-on-a-budget))"),
        .value("faces.minScore", \.faceMinScore, rule: .between(0, 1),
               "YuNet: the least score a face needs; lower finds more small or turned faces and more false ones"),
        .value("faces.attributesEverySeconds", \.faceAttributesEverySeconds, rule: .within(0...60),
               "smile and eyes closed read per face at most this often (3-15 ms a face), up to 4 times less on a face whose readings agree; 0: on every pass"),
    ]

    private static let cameraNameSettings: [SettingDefinition] = [
        .mapped("camera", \.camera, read: { (name: String) in name.isEmpty ? .keep : .set(name) }, show: { $0 ?? "" },
                "the name in events and MQTT topics (letters, digits, - _); empty: the host name (under cameras: its key). Reserved, in any case: api, cam, ws, metrics, healthz, snapshot, stream, index, available, events, stats, con, prn, aux, nul, com0-9, lpt0-9"),
        .value("media", \.mediaFolders, flag: "media-dir", use: .adds,
               "folders whose files admins may add as cameras or switch a camera to at runtime; the folders of the files the config names count too; never the data directory"),
    ]

    private static let eventsSettings: [SettingDefinition] = [
        .value("events.enabled", \.events.enabled, "false: no events, snapshots or MQTT"),
        .value("events.minSeconds", \.events.minSeconds, rule: .within(0...3600), "shorter appearances are not events"),
        .value("events.endAfterSeconds", \.events.endAfterSeconds, rule: .above(0, atMost: 3600),
               "an event ends once its thing has been absent this long"),
        .value("events.updateSeconds", \.events.updateSeconds, rule: .within(0.1...3600),
               "an open event is updated at least this often while in view (at least events.minUpdateSeconds)"),
        .value("events.minUpdateSeconds", \.events.minUpdateSeconds, rule: .atLeast(0.1),
               "and when its label, name or best score changes, at most this often"),
        .value("events.maxEvents", \.events.maxEvents, rule: .within(1...1_000_000), "retention: oldest deleted first beyond any of these"),
        .value("events.maxAgeDays", \.events.maxAgeDays, rule: .positive, "retention: days"),
        .value("events.maxMegabytes", \.events.maxMegabytes, rule: .atLeast(1), "retention: megabytes; clips count as part of their event"),
        .value("events.clips", \.events.clips, flag: "no-clips", use: .turnsOff,
               "a clip per event, <dataDir>/events/<id>.mp4 (needs video.h264; the encoder then runs whether or not anyone watches)"),
        .value("events.preCaptureSeconds", \.events.preCaptureSeconds, rule: .within(0...60), "video kept before the event's first frame"),
        .value("events.postCaptureSeconds", \.events.postCaptureSeconds, rule: .within(0...60), "video kept after the event's last frame"),
        .value("events.maxClipSeconds", \.events.maxClipSeconds, rule: .within(5...86_400),
               "a longer event's clip stops there (capped); the event goes on"),
    ]

    private static let recordSettings: [SettingDefinition] = [
        .value("record.enabled", \.record.enabled, "true: the encoder runs always; a day costs 2-20 GB at 640x480 (the bitrate)"),
        .value("record.segmentSeconds", \.record.segmentSeconds, rule: .within(5...3600),
               "a segment ends at the first keyframe this long after its start"),
        .value("record.maxAgeHours", \.record.maxAgeHours, rule: .positive, "retention: the oldest segments go beyond either limit"),
        .value("record.maxGigabytes", \.record.maxGigabytes, rule: .positive, "retention: gigabytes"),
    ]

    private static let mqttSettings: [SettingDefinition] = [
        .value("mqtt.host", \.mqtt.host, "the broker, e.g. 127.0.0.1; empty: no MQTT"),
        .value("mqtt.port", \.mqtt.port, "the broker's port"),
        mqttText("mqtt.username", \.mqtt.username, "the broker's user"),
        mqttText("mqtt.password", \.mqtt.password, "or env SIGHTLINE_MQTT_PASSWORD"),
        mqttText("mqtt.caFile", \.mqtt.caFile, "TLS: the broker's CA (PEM) ..."),
        mqttText("mqtt.certFile", \.mqtt.certFile, "... and a client certificate with its key, if the broker asks for one"),
        mqttText("mqtt.keyFile", \.mqtt.keyFile, "the client certificate's key"),
        mqttText("mqtt.clientId", \.mqtt.clientId, "empty: sightline-<camera> (the first camera's; one connection for every camera)"),
        .mapped("mqtt.topicPrefix", \.mqtt.topicPrefix, read: { (text: String) in text.isEmpty ? .keep : .set(text) },
                show: { $0 }, "<prefix>/available, /events, /stats, /<camera>/<label>[/snapshot]"),
        .value("mqtt.keepalive", \.mqtt.keepalive, "seconds; the broker says offline (last will) after 1.5x this of silence"),
        .value("mqtt.queueLimit", \.mqtt.queueLimit, "event messages kept while the broker is away (oldest dropped, counted)"),
        .value("mqtt.reconnectMaxSeconds", \.mqtt.reconnectMaxSeconds, "reconnect back-off: 0.5 s doubling up to this"),
        .value("mqtt.statsSeconds", \.mqtt.statsSeconds, "<prefix>/stats every this many seconds (0: never)"),
        .value("mqtt.homeAssistant", \.mqtt.homeAssistant, "retained discovery configs: Sightline appears as a device"),
        .mapped("mqtt.discoveryPrefix", \.mqtt.discoveryPrefix, read: { (text: String) in text.isEmpty ? .keep : .set(text) },
                show: { $0 }, "Home Assistant's discovery prefix"),
    ]

    private static let accessSettings: [SettingDefinition] = [
        .mapped("access.view", \.viewOpen,
                read: { (view: String) in
                    switch view {
                    case "": return .keep
                    case "open": return .set(true)
                    case "token": return .set(false)
                    default: return .refuse("open or token")
                    }
                },
                show: { open in open.map { $0 ? "open" : "token" } },
                "open or token; unset: open on loopback, token elsewhere ([security.md](security.md#access))"),
        .value("access.allowedOrigins", \.allowedOrigins, "origins whose WebSocket and changes are accepted (and get CORS headers)"),
        .value("access.allowedHosts", \.allowedHosts,
               "`Host` names a loopback-bound server accepts besides `localhost`, `127.0.0.1`, `[::1]`"),
        .value("access.sessionMinutes", \.sessionMinutes, rule: .positive, "how long the page's sign-in cookie lasts"),
        .value("access.trustedProxies", \.trustedProxies,
               "reverse proxies (addresses, CIDR blocks): exempt from the per-address limit, their `X-Forwarded-For` / `Forwarded` name the client ([security.md](security.md#behind-a-reverse-proxy))"),
    ]

    private static let dataDirSettings: [SettingDefinition] = [
        .value("dataDir", \.dataDir, flag: "data-dir", "templates, token, face data, events"),
        .mapped("token", \.token, read: { (token: String) in token.isEmpty ? .keep : .set(token) }, show: { $0 ?? "" },
                "bearer token for mutating calls; or env SIGHTLINE_TOKEN; empty: generated into `<dataDir>/token` at first start"),
        .value("logLevel", \.logLevel, flag: "log-level", "trace, debug, info, notice, warning, error"),
    ]

    private static let tlsSettings: [SettingDefinition] = [
        .value("tls.auto", \.tlsAuto, "a self-signed certificate made in `<dataDir>/tls/`"),
        .mapped("tls.cert", \.tlsCert, flag: "tls-cert", read: { (path: String) in path.isEmpty ? .keep : .set(path) },
                show: { $0 }, "your certificate chain (PEM); with tls.key, HTTPS and WSS on the same port (SIGHUP reloads it)"),
        .mapped("tls.key", \.tlsKey, flag: "tls-key", read: { (path: String) in path.isEmpty ? .keep : .set(path) },
                show: { $0 }, "its private key (PEM)"),
    ]

    private static let publishSettings: [SettingDefinition] = [
        .value("publish", \.publish, flag: "publish", use: .adds,
               "`rtsp://`, `rtmp://`, `rtmps://` relays fed the H.264 stream, SEI boxes included; ${NAME} is taken from the environment ([video.md](video.md#relays-publish))"),
    ]

    /// `cameras:`, which is not a setting but holds each camera's.
    public static let camerasDoc = "several cameras, each setting what a camera may set (the rows marked yes) and `camera`, its name ([below](#several-cameras-cameras))"

    /// The definition of `key`, if there is one.
    public static func definition(_ key: String) -> SettingDefinition? {
        byKey[key]
    }

    /// The sections (`faces`, `video`, ...) keys are under.
    public static let sections: Set<String> = Set(all.map(\.section).filter { !$0.isEmpty })

    /// The setting a flag sets, for argument-parser's declarations: its name ...
    public static func flagName(_ key: String) -> String {
        guard let flag = byKey[key]?.flag else { preconditionFailure("\(key) has no flag in SettingsCatalog") }
        return flag
    }

    /// ... and its help: the doc line, the key and the default.
    public static func flagHelp(_ key: String) -> String {
        guard let definition = byKey[key] else { preconditionFailure("\(key) is not in SettingsCatalog") }
        let rule = definition.ruleWords.map { "; \($0)" } ?? ""
        let shown = definition.defaultText.map { "; default \($0)" } ?? ""
        if definition.flagUse == .turnsOff { return "Sets \(key) to false (\(key): \(definition.doc)\(shown))." }
        return "\(definition.doc) (\(key)\(rule)\(shown))"
    }

    private static let byKey: [String: SettingDefinition] = Dictionary(all.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })

    private static func mqttText(_ key: String, _ path: WritableKeyPath<ServerSettings, String?> & Sendable,
                                 _ doc: String) -> SettingDefinition {
        .mapped(key, path, read: { (text: String) in text.isEmpty ? .keep : .set(text) }, show: { $0 ?? "" }, doc)
    }
}
