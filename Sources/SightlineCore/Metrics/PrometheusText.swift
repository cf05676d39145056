import Foundation
import Prometheus
import SightlineVision
import SightlineSupport
import SightlinePipeline
import SightlineHTTP
import SightlineEvents

/// `/metrics` in the Prometheus text exposition format (0.0.4), written by
/// swift-prometheus: every camera's series with a `camera` label, and the
/// server's own (connections refused or evicted, stalled headers, uptime)
/// once, without one. `/cam/NAME/metrics` is that camera's series (still
/// labelled) and the server's.
///
/// How Sightline's figures reach the library: counters and gauges are
/// cumulative values its stats objects keep and read at scrape time, so each
/// scrape makes a fresh `PrometheusCollectorRegistry` and sets each counter
/// (`increment(by:)` its total) and gauge from the snapshots; nothing is
/// kept between scrapes, and a camera removed is in no later page.
/// Histograms cannot be given as bucket counts, so they are recorded live:
/// `ServerMetrics.attach` makes a camera's stage, capture-to-send and encode
/// histograms and the camera's `PipelineStats` and `VideoStats` hand each
/// duration to them as it is recorded (`TimingObserver`), the same values
/// their own `LatencyHistogram`s (for `/api/state`'s percentiles) get.
/// A histogram family is emitted whole by the registry that recorded it, so
/// each duration goes to two: the server's (every camera, for `/metrics`)
/// and the camera's own (for `/cam/NAME/metrics`). `detach` unregisters a
/// removed camera's from the server's and drops its own.
public enum PrometheusText {
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// The page: `server`'s series, then each of `cameras`, then the
    /// histograms `histograms` recorded (one registry per family set).
    public static func render(server: ServerReading, cameras: [CameraReading],
                              histograms: [PrometheusCollectorRegistry]) -> String {
        let registry = PrometheusCollectorRegistry()
        Exposition(registry: registry, base: []).server(server)
        for camera in cameras { Exposition(registry: registry, base: [("camera", camera.name)]).camera(camera) }
        return registry.emitToString() + histograms.map { $0.emitToString() }.joined()
    }

    /// Bucket upper bounds of the histograms (seconds).
    static let buckets = LatencyHistogram.prometheusBounds

    static var stageSeconds: MetricNameDescriptor {
        MetricNameDescriptor(metricName: "sightline_stage_seconds", unitName: "", helpText: "Time spent per frame in each pipeline stage.")
    }
    static var captureToSendSeconds: MetricNameDescriptor {
        MetricNameDescriptor(metricName: "sightline_capture_to_send_seconds", unitName: "",
                             helpText: "Age of a frame when it is written to a client.")
    }
    static var encodeSeconds: MetricNameDescriptor {
        MetricNameDescriptor(metricName: "sightline_video_encode_seconds", unitName: "",
                             helpText: "Time to encode one frame to H.264, by rendition.")
    }
}

/// The server's own figures at scrape time.
public struct ServerReading: Sendable {
    public var stats: ServerStats.Snapshot
    public var uptime: Double

    public init(stats: ServerStats.Snapshot = ServerStats.Snapshot(), uptime: Double = 0) {
        self.stats = stats
        self.uptime = uptime
    }
}

/// One camera's figures at scrape time (its histograms are recorded live; see `PrometheusText`).
public struct CameraReading: Sendable {
    public var name: String
    public var stats: PipelineStats.Snapshot
    public var status: SourceStatus
    public var templates = 0
    public var sinks: [String: SinkCounts] = [:]
    public var video: VideoStats.Snapshot?
    public var publish: [PublishStatus] = []
    public var events: EventStatus?
    public var recording: SegmentRecorder.Status?

    public init(name: String, stats: PipelineStats.Snapshot, status: SourceStatus) {
        self.name = name
        self.stats = stats
        self.status = status
    }
}

/// Sets one scrape's counters and gauges in `registry`, each labelled `base` first.
private struct Exposition {
    let registry: PrometheusCollectorRegistry
    let base: [(String, String)]

    func counter(_ name: String, _ help: String, _ samples: [([(String, String)], UInt64)]) {
        let descriptor = MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
        for (labels, value) in samples {
            registry.makeCounter(descriptor: descriptor, labels: base + labels).increment(by: Int64(clamping: value))
        }
    }

    func counter(_ name: String, _ help: String, _ value: UInt64) { counter(name, help, [([], value)]) }

    /// A counter of seconds (or any amount that is not whole).
    func counter(_ name: String, _ help: String, _ samples: [([(String, String)], Double)]) {
        let descriptor = MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
        for (labels, value) in samples {
            registry.makeCounter(descriptor: descriptor, labels: base + labels).increment(by: max(0, value))
        }
    }

    func gauge(_ name: String, _ help: String, _ samples: [([(String, String)], Double)]) {
        let descriptor = MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
        for (labels, value) in samples { registry.makeGauge(descriptor: descriptor, labels: base + labels).set(value) }
    }

    func gauge(_ name: String, _ help: String, _ value: Double) { gauge(name, help, [([], value)]) }

    func server(_ server: ServerReading) {
        counter("sightline_connections_refused_total",
                "Connections closed at once because their address had too many that had not finished their headers.",
                server.stats.connectionsRefused)
        counter("sightline_connections_evicted_total",
                "Connections that had not finished their headers, shut down oldest first to make room for new ones.",
                server.stats.connectionsEvicted)
        counter("sightline_requests_stalled_headers_total",
                "Requests answered 400 because their headers stopped coming after the request line.", server.stats.headersStalled)
        gauge("sightline_uptime_seconds", "Seconds since start.", server.uptime)
    }

    func camera(_ camera: CameraReading) {
        pipeline(camera)
        if let video = camera.video { self.video(video) }
        if !camera.publish.isEmpty { publish(camera.publish) }
        if let events = camera.events { self.events(events) }
        if let recording = camera.recording { self.recording(recording) }
    }

    private func pipeline(_ camera: CameraReading) {
        let stats = camera.stats
        counter("sightline_frames_captured_total", "Frames read from the source.", stats.captured)
        counter("sightline_frames_processed_total", "Frames through the pipeline.", stats.processed)
        counter("sightline_frames_sent_total", "Distinct frames sent to at least one client.", stats.sent)
        counter("sightline_frames_dropped_total", "Frames the pipeline dropped, by reason.",
                DropReason.allCases.map { ([("reason", $0.rawValue)], stats.drops[$0] ?? 0) })
        counter("sightline_client_frames_skipped_total", "Frames slow clients did not get.", stats.clientSkips)
        counter("sightline_sent_bytes_total", "Bytes of frames sent to clients.", stats.bytesSent)
        gauge("sightline_fps", "Frames per second over the last seconds.",
              [([("kind", "capture")], stats.captureFPS), ([("kind", "processed")], stats.processedFPS),
               ([("kind", "sent")], stats.sentFPS)])
        gauge("sightline_clients", "Connected streaming clients.",
              [([("kind", "ws")], Double(stats.webSocketClients)), ([("kind", "mjpeg")], Double(stats.mjpegClients))])
        if let mode = stats.faceMode {
            gauge("sightline_face_detection_mode",
                  "1 for how face detection is paced now: active (faces or change), still (nothing changes), unwatched (no consumer).",
                  FaceDetectionPolicy.Mode.allCases.map { ([("mode", $0.rawValue)], $0 == mode ? 1 : 0) })
            counter("sightline_face_detection_passes_total", "Face detection passes finished.", stats.facePasses)
            counter("sightline_face_fine_passes_total", "Of the face detection passes: fine ones (small and tilted faces).",
                    stats.faceFinePasses)
            counter("sightline_face_cut_frame_passes_total", "Of the face detection passes: quick ones on a cut's own frame.",
                    stats.faceCutFramePasses)
            counter("sightline_face_scene_cuts_total", "Cuts to another picture; each ended every face track.", stats.faceSceneCuts)
            counter("sightline_face_pass_seconds_total",
                    "Face passes' time by part: read, detect, crops, personCheck, attributes, other (the face thread) and recognition (the pipeline thread).",
                    stats.facePassSeconds.parts.map { ([("part", $0.name)], $0.seconds) })
        }
        counter("sightline_storage_write_failures_total",
                "Writes to the data directory that failed (a full disk, permissions), by what they were for.",
                StorageArea.allCases.map { ([("area", $0.rawValue)], stats.storageWriteFailures[$0] ?? 0) })
        let sinkNames = camera.sinks.keys.sorted()
        counter("sightline_sink_frames_delivered_total", "Frames the pipeline handed to each sink.",
                sinkNames.map { ([("sink", $0)], camera.sinks[$0]!.delivered) })
        counter("sightline_sink_frames_skipped_total",
                "Frames a sink did not take because a newer one replaced them (stream: frames slow clients skipped).",
                sinkNames.map { ([("sink", $0)], camera.sinks[$0]!.skipped) })
        gauge("sightline_source_up", "1 while the source delivers frames.", camera.status.state == .live ? 1 : 0)
        gauge("sightline_templates", "Templates being looked for.", Double(camera.templates))
    }

    /// H.264 and JPEG on /ws (VideoStats).
    private func video(_ video: VideoStats.Snapshot) {
        gauge("sightline_video_viewers", "WebSocket viewers by format, and H.264 viewers by rendition.",
              [([("format", "jpeg")], Double(video.viewers.jpeg)), ([("format", "h264")], Double(video.viewers.h264))]
                + video.renditions.map { ([("format", "h264"), ("rendition", $0.name.rawValue)], Double($0.viewers)) })
        gauge("sightline_video_bytes_per_frame", "Mean bytes of a frame over the last 150: the JPEG, the main H.264 access unit.",
              [([("format", "jpeg")], video.bytesPerFrame.jpeg ?? 0), ([("format", "h264")], video.bytesPerFrame.h264 ?? 0)])
        counter("sightline_video_frames_encoded_total",
                "Frames made H.264 for a rendition: encoded here, or the source's own passed on (see the next).",
                video.renditions.map { ([("rendition", $0.name.rawValue)], $0.frames) })
        counter("sightline_video_passed_on_total",
                "The source's own H.264 access units passed on unencoded, by rendition, and of those the frames not analysed.",
                video.renditions.flatMap { [([("rendition", $0.name.rawValue), ("analysed", "true")],
                                             $0.passedOnUnits - $0.passedOnUnanalysed),
                                            ([("rendition", $0.name.rawValue), ("analysed", "false")], $0.passedOnUnanalysed)] })
        counter("sightline_video_encoded_bytes_total", "Bytes of H.264 access units made, by rendition.",
                video.renditions.map { ([("rendition", $0.name.rawValue)], $0.bytes) })
        counter("sightline_video_keyframes_total",
                "H.264 keyframes: scheduled by the interval, or requested (forced for a viewer joining or moved ahead).",
                video.renditions.flatMap { r in
                    [([("rendition", r.name.rawValue), ("reason", "scheduled")], r.keyframes.scheduled),
                     ([("rendition", r.name.rawValue), ("reason", "requested")], r.keyframes.requested)]
                })
        counter("sightline_video_skips_to_keyframe_total",
                "Times an H.264 viewer fell behind and was moved ahead to the next keyframe.", video.skipsToKeyframe)
        counter("sightline_video_encode_failures_total", "Frames the H.264 encoder failed on.",
                video.renditions.map { ([("rendition", $0.name.rawValue)], $0.encodeFailures) })
    }

    /// Each publish target, labelled by its place in the list (`index`, as
    /// in `publish:`) and its scheme, host and port only (`target`): anyone who
    /// may view reads `/metrics`, and a relay's path is usually its secret
    /// stream key (`/api/state` shows the rest to admins).
    private func publish(_ publish: [PublishStatus]) {
        let labels = publish.enumerated().map { index, target in
            [("target", PublishTarget.location(target.url)), ("index", "\(index)")]
        }
        gauge("sightline_publish_up", "1 while access units go out to the relay.",
              zip(labels, publish).map { ($0, $1.state == .publishing ? 1 : 0) })
        counter("sightline_publish_frames_total", "Access units sent to the relay.", zip(labels, publish).map { ($0, $1.frames) })
        counter("sightline_publish_bytes_total", "Bytes of access units sent to the relay.",
                zip(labels, publish).map { ($0, $1.bytes) })
        counter("sightline_publish_dropped_frames_total", "Frames that did not reach the relay (it was slow or away).",
                zip(labels, publish).map { ($0, $1.drops) })
        counter("sightline_publish_reconnects_total", "Connections to the relay after the first.",
                zip(labels, publish).map { ($0, $1.reconnects) })
    }

    /// Events and MQTT (while events are on).
    private func events(_ events: EventStatus) {
        gauge("sightline_events_stored", "Events kept in <data-dir>/events.", Double(events.store.events))
        gauge("sightline_events_open", "Events under way (their thing in view).", Double(events.store.open))
        gauge("sightline_events_stored_bytes", "Bytes of event records and images.", Double(events.store.bytes))
        counter("sightline_event_writes_total", "Event states written, dropped while too many waited, or failed.",
                [([("result", "saved")], events.recorder.saved), ([("result", "dropped")], events.recorder.dropped),
                 ([("result", "failed")], events.recorder.failed)])
        if let clips = events.clips {
            gauge("sightline_clips_active", "Events whose clip is being written.", Double(clips.active))
            gauge("sightline_clips_files", "Clip files being written (overlapping events share one).", Double(clips.files))
            counter("sightline_clips_total", "Event clips finished whole, or stopped by a failed write.",
                    [([("result", "completed")], clips.completed), ([("result", "failed")], clips.failed)])
            gauge("sightline_clips_writing", "1 while clips are written, 0 while writes fail (a full disk).",
                  clips.state == "failing" ? 0 : 1)
            counter("sightline_clips_lost_frames_total", "Frames the clip writer fell too far behind to keep.", clips.lostFrames)
            gauge("sightline_clips_precapture_bytes", "Encoded video kept for pre-capture.", Double(clips.preCaptureBytes))
        }
        guard let mqtt = events.mqtt else { return }
        gauge("sightline_mqtt_connected", "1 while connected to the broker.", mqtt.connected ? 1 : 0)
        counter("sightline_mqtt_messages_published_total", "Messages the broker acknowledged.", mqtt.published)
        counter("sightline_mqtt_messages_dropped_total", "Event messages dropped because the queue was full.", mqtt.dropped)
        gauge("sightline_mqtt_queued", "Messages waiting for the broker.",
              [([("kind", "event")], Double(mqtt.queuedEvents)), ([("kind", "state")], Double(mqtt.queuedStates))])
        counter("sightline_mqtt_connection_failures_total", "Connection attempts that failed or connections lost.", mqtt.failures)
    }

    private func recording(_ recording: SegmentRecorder.Status) {
        gauge("sightline_recording_writing", "1 while segments are written, 0 while writes fail (a full disk).",
              recording.state == "failing" ? 0 : 1)
        counter("sightline_recording_segments_total", "Segments finished, or failed writes.",
                [([("result", "completed")], recording.segments), ([("result", "failed")], recording.failed)])
        gauge("sightline_recording_bytes", "Bytes kept in <data-dir>/recordings.", Double(recording.bytes))
    }
}

/// A camera's histograms (stage seconds, capture-to-send, encode seconds),
/// recorded live as its stats record each duration; each in two registries
/// (see `PrometheusText`): the server's, shared by every camera, and `own`.
final class CameraHistograms: Sendable {
    /// This camera's alone, for `/cam/NAME/metrics`.
    let own = PrometheusCollectorRegistry()
    private let shared: PrometheusCollectorRegistry
    /// Each timing's histogram in `own` and in `shared`, in that order.
    private let histograms: [Timing: [ValueHistogram]]

    init(camera: String, shared: PrometheusCollectorRegistry) {
        self.shared = shared
        let registries = [own, shared]
        func make(_ descriptor: MetricNameDescriptor, _ labels: [(String, String)]) -> [ValueHistogram] {
            registries.map { $0.makeValueHistogram(descriptor: descriptor, labels: [("camera", camera)] + labels,
                                                   buckets: PrometheusText.buckets) }
        }
        var histograms: [Timing: [ValueHistogram]] = [:]
        for stage in StageName.allCases { histograms[.stage(stage)] = make(PrometheusText.stageSeconds, [("stage", stage.rawValue)]) }
        histograms[.captureToSend] = make(PrometheusText.captureToSendSeconds, [])
        for rendition in VideoRendition.allCases {
            histograms[.encode(rendition)] = make(PrometheusText.encodeSeconds, [("rendition", rendition.rawValue)])
        }
        self.histograms = histograms
    }

    func record(_ timing: Timing, seconds: Double) {
        for histogram in histograms[timing] ?? [] { histogram.record(seconds) }
    }

    /// Out of the server's registry (the camera was removed).
    func unregister() {
        for pair in histograms.values where pair.count == 2 { shared.unregisterValueHistogram(pair[1]) }
    }
}

/// The server's metrics: its `ServerStats` and start, and every camera's
/// histograms while the camera is attached (from before it starts until it
/// is removed).
final class ServerMetrics: Sendable {
    let server: ServerStats
    private let startedAt: UInt64
    /// Every attached camera's histograms, labelled by camera.
    private let histograms = PrometheusCollectorRegistry()
    private let cameras = Locked<[String: CameraHistograms]>([:])

    init(server: ServerStats, startedAt: UInt64) {
        self.server = server
        self.startedAt = startedAt
    }

    /// Before the camera starts: its stats hand their durations to its histograms.
    func attach(camera: String, stats: PipelineStats, video: VideoStats) {
        let made = cameras.withLock { cameras in
            cameras.removeValue(forKey: camera)?.unregister()
            let made = CameraHistograms(camera: camera, shared: histograms)
            cameras[camera] = made
            return made
        }
        stats.observeTimings { timing, seconds in made.record(timing, seconds: seconds) }
        video.observeTimings { timing, seconds in made.record(timing, seconds: seconds) }
    }

    /// A camera removed: its histograms go, and nothing of it stays.
    func detach(camera: String, stats: PipelineStats, video: VideoStats) {
        stats.observeTimings(nil)
        video.observeTimings(nil)
        cameras.withLock { $0.removeValue(forKey: camera) }?.unregister()
    }

    private var reading: ServerReading {
        ServerReading(stats: server.snapshot(), uptime: Double(MonotonicClock.nanos() - startedAt) / 1e9)
    }

    /// `/metrics`: every camera in `cameras` and the server.
    func page(_ cameras: [CameraReading]) -> String {
        PrometheusText.render(server: reading, cameras: cameras, histograms: [histograms])
    }

    /// `/cam/NAME/metrics`: one camera and the server.
    func page(camera: CameraReading) -> String {
        let own = cameras.withLock { $0[camera.name]?.own }
        return PrometheusText.render(server: reading, cameras: [camera], histograms: own.map { [$0] } ?? [])
    }
}
