import ArgumentParser
import Foundation
import SightlineCore
import SightlineVision
import SightlinePipeline
import SightlineHTTP

/// The settings flags `serve` and `bench` share, so `bench` measures the
/// graph `serve` would build from the same command line and config.
struct SettingsOptions: ParsableArguments {
    @Option(help: "YAML config file (flags override it). Default: config/sightline.yaml if present.")
    var config: String?

    @Option(help: "auto | demo[?size=WxH&fps=N&seed=N] | v4l2:/dev/videoN | file:PATH[?pace=native|max] | rtsp://... | http://...")
    var source: String?

    @Option(help: "Address to listen on (default 127.0.0.1).")
    var host: String?

    @Option(help: "Port to listen on (default 8080; 0: any free port, logged at start).")
    var port: Int?

    @Option(help: "TLS certificate chain (PEM); with --tls-key, HTTPS and WSS on the same port (SIGHUP reloads it).")
    var tlsCert: String?

    @Option(help: "TLS private key (PEM).")
    var tlsKey: String?

    @Option(name: .customLong("template"), help: "Template image PATH[=NAME], loaded at start; repeatable.")
    var templates: [String] = []

    @Option(help: "Data directory: token, templates (created if missing).")
    var dataDir: String?

    @Option(help: "Folder with the browser client (default web).")
    var webRoot: String?

    @Option(help: "JPEG quality 1-100 (default 80).")
    var quality: Int?

    @Option(help: "Widest JPEG streamed, pixels: wider frames are scaled down to it for JPEG viewers, /stream.mjpg and snapshots (video.jpegMaxWidth; default 1280; 0: full size; ?full=1 asks for the full picture).")
    var jpegMaxWidth: Int?

    @Option(help: "Threads for OpenCV's own parallel loops (default 1: each call on its calling thread; more lowers one face pass's latency at a higher total CPU cost).")
    var opencvThreads: Int?

    @Option(help: "Log level: trace, debug, info, notice, warning, error.")
    var logLevel: String?

    @Option(help: "YuNet face model (ONNX), or haar for the Haar cascades; also SIGHTLINE_FACE_MODEL or faces.model. Default: the shipped models/face_detection_yunet_2023mar_320.onnx.")
    var faceModel: String?

    @Flag(help: "Do not look for faces.")
    var noFaces = false

    @Flag(help: "Keep no video clips of events (events.clips: false); the H.264 encoder then runs only while someone watches or a relay is fed.")
    var noClips = false

    @Option(help: "Analyse frames larger than this (longest side, pixels) on a copy scaled down to it (analysis.size; default 640; 0: at their own size).")
    var analysisSize: Int?

    @Option(help: "Most faces reported per frame (default 10).")
    var maxFaces: Int?

    @Option(name: .customLong("offer-source"), help: "Another source for the browser's selector; repeatable.")
    var offeredSources: [String] = []

    @Option(name: .customLong("media-dir"),
            help: "A folder whose files admins may add as cameras or switch to at runtime (besides the folders of the files the config names); repeatable.")
    var mediaDirs: [String] = []

    @Option(name: .customLong("publish"),
            help: "Publish the H.264 stream (SEI boxes included) to this rtsp:// or rtmp:// relay; repeatable. ${NAME} is taken from the environment.")
    var publish: [String] = []

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
        if let source { settings.source = source }
        if let host { settings.host = host }
        if let port { settings.port = port }
        if let tlsCert { settings.tlsCert = tlsCert }
        if let tlsKey { settings.tlsKey = tlsKey }
        if !templates.isEmpty { settings.templates = templates }
        if let dataDir { settings.dataDir = dataDir }
        if let webRoot { settings.webRoot = webRoot }
        if let quality { settings.jpegQuality = quality }
        if let jpegMaxWidth { settings.jpegMaxWidth = jpegMaxWidth }
        if let opencvThreads { settings.opencvThreads = opencvThreads }
        if let logLevel { settings.logLevel = logLevel }
        if let debugStageDelayMs { settings.debugStageDelayMs = debugStageDelayMs }
        if noFaces { settings.facesEnabled = false }
        if noClips { settings.events.clips = false }
        if let maxFaces { settings.maxFaces = maxFaces }
        if let analysisSize { settings.analysisSize = analysisSize }
        if !offeredSources.isEmpty { settings.offeredSources += offeredSources }
        if !publish.isEmpty { settings.publish += publish }
        if !mediaDirs.isEmpty { settings.mediaFolders += mediaDirs }
        settings.faceModel = FaceDetectorFactory.resolveModelPath(flag: faceModel, environment: ProcessInfo.processInfo.environment,
                                                                  configured: settings.faceModel)
        do {
            try settings.validate()
        } catch {
            throw ValidationError("\(error)")
        }
        return settings
    }

}
