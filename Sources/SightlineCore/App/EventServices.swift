import Foundation
import Logging
import Synchronization
import SightlineVision
import SightlineSupport
import SightlinePipeline
import SightlineHTTP
import SightlineEvents

/// Events, their snapshots and MQTT, assembled from a camera's settings (and the server's MQTT) for one
/// camera: the store in `<data-dir>/events` (loaded, leftovers removed),
/// its channel onto the server's shared MQTT connection (`MQTTConnections`)
/// when `mqtt.host` is set, the sink the pipeline feeds,
/// and the API. `SightlineServer` adds `sink` to the camera's sinks, calls
/// `watch` once the camera's templates and faces exist, and routes `api`.
///
/// Threads: made on the main thread; its parts guard themselves.
public final class EventServices: Sendable {
    public let camera: String
    public let store: EventStore
    public let sink: EventSink
    /// The camera's way onto the server's broker connection (nil: MQTT off).
    public let mqtt: MQTTCameraChannel?

    /// `feed`: the H.264 sink's, for clips (nil: no clips, as with `events.clips` false).
    /// `connections`: the server's broker connections, shared by its cameras.
    public init(server: ServerSettings, camera settings: ConfiguredCamera, stats: PipelineStats, feed: VideoFeed? = nil, logger: Logger,
                connections: MQTTConnections,
                environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        camera = settings.cameraName
        store = EventStore(dataDirectory: settings.dataDir, limits: settings.events.limits)
        let report: EventStore.LoadReport
        do {
            report = try store.load()
        } catch let error as StorageError {
            throw ConfigError.invalid("cannot make the events directory \(store.directory): \(error)")
        }
        for file in report.removedFiles {
            logger.notice("events: removed a leftover of an interrupted write", metadata: ["file": "\(file)"])
        }
        if report.closed > 0 {
            logger.notice("events: closed \(report.closed) left open by an unclean stop, at their last sighting")
        }
        logger.info("events on", metadata: ["camera": "\(camera)", "stored": "\(report.loaded)",
                                            "directory": "\(store.directory)"])
        let reporter = MQTTStatsReport(camera: camera, stats: stats, store: store)
        let clipsOn = settings.events.clips && feed != nil
        mqtt = try connections.publisher(for: server.mqtt, camera: camera, environment: environment)?
            .channel(camera: camera, clips: clipsOn, report: reporter)
        let store = self.store
        let clips = clipsOn ? feed.map {
            ClipRecorder(store: store, feed: $0, options: settings.events.clipOptions, logger: logger)
        } : nil
        if settings.events.clips && feed == nil {
            logger.warning("events: no clips (they need video.h264)")
        }
        if report.cutClips > 0 {
            logger.notice("events: \(report.cutClips) clip(s) cut short by an unclean stop kept up to their last fragment")
        }
        sink = EventSink(options: settings.events.trackerOptions(camera: camera), store: store, publisher: mqtt,
                         clips: clips, logger: logger, storageFailures: StorageFailureReporter(stats: stats, logger: logger))
        reporter.attach(sink)
    }

    /// The catalog for discovery and zero counts: templates now, people now, whether faces run.
    public func watch(templates: TemplateLibrary, faces: FaceService?) {
        sink.watchCatalog {
            HomeAssistantDiscovery.Catalog(templates: templates.all.map(\.name).sorted(),
                                           people: faces?.people().map(\.name).sorted() ?? [], faces: faces != nil)
        }
    }

    public var status: EventStatus {
        EventStatus(camera: camera, store: store.totals, recorder: sink.recorder.counts, tracker: sink.trackerCounts,
                    mqtt: mqtt?.status, clips: sink.clips?.snapshot)
    }

    /// The API; `namer` when faces run (naming a person from a face event),
    /// `recordings` with continuous recording.
    public func api(namer: EventNamer?, recordings: RecordingAPI? = nil) -> EventAPI {
        var spans: (@Sendable (Double, Double) -> [RecordingReference])?
        if let recordings { spans = { start, end in recordings.references(from: start, to: end) } }
        return EventAPI(store: store, status: { [self] in status }, namer: namer, recordings: spans)
    }
}
