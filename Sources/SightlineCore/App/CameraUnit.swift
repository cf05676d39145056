import Foundation
import Logging
import SightlineVision
import SightlineSupport
import SightlinePipeline
import SightlineHTTP
import SightlineStreaming
import SightlineEvents

/// One camera of the server and everything that serves only it: its graph
/// (capture, pipeline, sinks; `CameraAssembly`), its stream and H.264 sinks,
/// its events (store, MQTT, clips), publish targets and continuous
/// recording, each on its own data directory. `SightlineServer` holds one
/// per configured camera and shares among them the token store, the access
/// guard and the libwebsockets server.
///
/// Threads: made, started and stopped on the main thread, or, for a camera
/// added or removed at runtime, on the request worker (`CameraRegistry`, one
/// change at a time); its parts run on their own threads and guard their own state.
public final class CameraUnit: Sendable {
    /// Its name in routes: `/cam/NAME/...` and `/api/cameras/NAME/...`.
    public let name: String
    /// Its own settings, names and data directory (the server's are not kept here).
    public let settings: ConfiguredCamera
    public let graph: CameraGraph
    let stream: StreamSink
    /// Encodes H.264 for `/ws?video=h264` viewers (nil: video.h264 off).
    let h264: H264Sink?
    let videoStats: VideoStats
    /// One per `publish:` target (none without).
    public let publishers: [Publisher]
    /// Events, snapshots, clips and MQTT; nil with events.enabled false.
    public let events: EventServices?
    /// Continuous recording; nil while record.enabled is false (or without H.264).
    public let recorder: SegmentRecorder?
    let parts: StateParts

    /// What `/api/state` and `/metrics` read beside the camera's graph.
    struct StateParts: Sendable {
        let video: (feed: VideoFeed?, stats: VideoStats)
        let publishers: [Publisher]
        let clips: ClipRecorder?
        let recorder: SegmentRecorder?
    }

    /// `server`: the server's settings (encoders, recording, MQTT);
    /// `settings`: the camera's own (`ServeSettings.cameraSettings()`);
    /// `tagLogs`: name the camera on its log lines (with more than one).
    /// `sharing`: the face detection thread and models every camera shares.
    /// `connections`: the server's broker connections, which its cameras share.
    init(server: ServerSettings, settings: ConfiguredCamera, logger: Logger, environment: [String: String], tagLogs: Bool,
         sharing: FaceSharing? = nil, connections: MQTTConnections) throws {
        name = settings.routeName
        self.settings = settings
        let logger = tagLogs ? Self.logger(logger, camera: name) : logger
        let assembly = try CameraAssembly(server: server, camera: settings, logger: logger)
        do {
            try AtomicFile.makeDirectory(settings.dataDir)
        } catch let error as StorageError {
            throw ConfigError.invalid("cannot make the data directory \(settings.dataDir): \(error)")
        }
        let stats = PipelineStats()
        let videoStats = VideoStats()
        let stream = StreamSink(stats: stats, videoStats: videoStats)
        // The source's rate, for the encoder's keyframe interval and rate control; read when an encoder is made.
        let sourceRate = LockedCallback<Void, Double>()
        let h264 = server.video.h264Enabled
            ? H264Sink(settings: server.video, stats: videoStats,
                       sourceFPS: { sourceRate() ?? settings.cameraFPS }, relaysUp: { stats.hasRelaysUp }, logger: logger)
            : nil
        let events = settings.events.enabled
            ? try EventServices(server: server, camera: settings, stats: stats, feed: h264?.feed, logger: logger,
                                  connections: connections, environment: environment)
            : nil
        let watchdog = WatchdogSink()
        graph = try assembly.build(stats: stats, sinks: [stream] + (h264.map { [$0] } ?? []) + [watchdog]
                                        + (events.map { [$0.sink] } ?? []), sharing: sharing, relay: h264?.relay)
        let capture = graph.capture
        sourceRate.setAction { capture.status.format?.fps ?? settings.cameraFPS }
        self.stream = stream
        self.h264 = h264
        self.videoStats = videoStats
        let targets = try settings.publish.map { try PublishTarget.parse($0, environment: environment) }
        publishers = h264.map { sink in
            targets.map { Publisher(target: $0, feed: sink.feed, logger: logger, watching: { stats.publishTarget(up: $0) }) }
        } ?? []
        events?.watch(templates: graph.templates, faces: graph.faceService)
        self.events = events
        recorder = try Self.segmentRecorder(settings: server.record, dataDir: settings.dataDir, feed: h264?.feed, logger: logger)
        parts = StateParts(video: (h264?.feed, videoStats), publishers: publishers, clips: events?.sink.clips,
                           recorder: recorder)
        self.watchdog = watchdog
    }

    private let watchdog: WatchdogSink

    /// The camera as the stream server sends it: its frames, stats and H.264 feed.
    var feed: CameraFeed {
        CameraFeed(name: name, frames: stream.slot, stats: graph.stats, video: h264?.feed,
                   videoStats: h264 == nil ? nil : videoStats)
    }

    /// The camera's name on every log line of its parts (beside one camera's, another's).
    static func logger(_ base: Logger, camera: String) -> Logger {
        var logger = base
        logger[metadataKey: "camera"] = "\(camera)"
        return logger
    }

    /// Main thread, before `start`: the server whose service thread sends
    /// this camera's frames, and whose responsiveness its watchdog checks.
    func connect(to server: StreamServer) {
        watchdog.alsoRequire { seconds in server.serviceResponsive(within: seconds) }
    }

    func start(waking server: StreamServer) throws {
        stream.connect(wake: { server.wake() })
        h264?.connect(wake: { server.wake() })
        try graph.start()
        recorder?.start()
        for publisher in publishers { publisher.start() }
    }

    func stop() {
        for publisher in publishers { publisher.stop() }
        graph.stop()
        recorder?.stop()
        stream.connect(wake: nil)
        h264?.connect(wake: nil)
    }

    /// Off the shared broker connection: `clear` for a camera removed at
    /// runtime (its retained counts, snapshots and discovery configs are
    /// cleared), not for one that never started.
    func leaveMQTT(clear: Bool) {
        events?.mqtt?.detach(clear: clear)
    }

    /// Continuous recording when `record.enabled` (it needs the H.264 encoder): its store loaded.
    private static func segmentRecorder(settings: RecordSettings, dataDir: String, feed: VideoFeed?,
                                        logger: Logger) throws -> SegmentRecorder? {
        guard settings.enabled else { return nil }
        guard let feed else {
            logger.warning("recording: off (it needs video.h264)")
            return nil
        }
        let store = RecordingStore(dataDirectory: dataDir, limits: settings.limits)
        let cut: Int
        do {
            cut = try store.load()
        } catch {
            throw ConfigError.invalid("cannot use the recordings directory \(store.directory): \(error)")
        }
        if cut > 0 { logger.notice("recording: \(cut) segment(s) cut short by an unclean stop kept up to their last fragment") }
        logger.info("recording on", metadata: ["directory": "\(store.directory)", "segments": "\(store.list().count)",
                                               "segmentSeconds": "\(settings.segmentSeconds)"])
        return SegmentRecorder(store: store, feed: feed, segmentSeconds: settings.segmentSeconds, logger: logger)
    }
}
