import Foundation
import SightlineVision
import SightlineSupport
import SightlinePipeline
import SightlineHTTP
import SightlineEvents

/// Renders the server's metrics in the Prometheus text exposition format (0.0.4).
public enum PrometheusText {
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    public static func render(stats: PipelineStats.Snapshot, server: ServerStats.Snapshot, status: SourceStatus,
                              templates: Int, uptime: Double,
                              sinks: [String: SinkCounts] = [:]) -> String {
        var out = ""
        func metric(_ name: String, _ type: String, _ help: String, _ samples: [(String, Double)]) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            for (labels, value) in samples { out += "\(name)\(labels) \(format(value))\n" }
        }
        metric("sightline_frames_captured_total", "counter", "Frames read from the source.", [("", Double(stats.captured))])
        metric("sightline_frames_processed_total", "counter", "Frames through the pipeline.", [("", Double(stats.processed))])
        metric("sightline_frames_sent_total", "counter", "Distinct frames sent to at least one client.", [("", Double(stats.sent))])
        metric("sightline_frames_dropped_total", "counter", "Frames the pipeline dropped, by reason.",
               DropReason.allCases.map { ("{reason=\"\($0.rawValue)\"}", Double(stats.drops[$0] ?? 0)) })
        metric("sightline_client_frames_skipped_total", "counter", "Frames slow clients did not get.",
               [("", Double(stats.clientSkips))])
        metric("sightline_sent_bytes_total", "counter", "Bytes of frames sent to clients.", [("", Double(stats.bytesSent))])
        metric("sightline_fps", "gauge", "Frames per second over the last seconds.",
               [("{kind=\"capture\"}", stats.captureFPS), ("{kind=\"processed\"}", stats.processedFPS),
                ("{kind=\"sent\"}", stats.sentFPS)])
        metric("sightline_clients", "gauge", "Connected streaming clients.",
               [("{kind=\"ws\"}", Double(stats.webSocketClients)), ("{kind=\"mjpeg\"}", Double(stats.mjpegClients))])
        if let mode = stats.faceMode {
            metric("sightline_face_detection_mode", "gauge",
                   "1 for how face detection is paced now: active (faces or change), still (nothing changes), unwatched (no consumer).",
                   FaceDetectionPolicy.Mode.allCases.map { ("{mode=\"\($0.rawValue)\"}", $0 == mode ? 1 : 0) })
            metric("sightline_face_detection_passes_total", "counter", "Face detection passes finished.",
                   [("", Double(stats.facePasses))])
            metric("sightline_face_fine_passes_total", "counter",
                   "Of the face detection passes: fine ones (small and tilted faces).", [("", Double(stats.faceFinePasses))])
            metric("sightline_face_cut_frame_passes_total", "counter",
                   "Of the face detection passes: quick ones on a cut's own frame.",
                   [("", Double(stats.faceCutFramePasses))])
            metric("sightline_face_scene_cuts_total", "counter", "Cuts to another picture; each ended every face track.",
                   [("", Double(stats.faceSceneCuts))])
        }
        metric("sightline_connections_refused_total", "counter",
               "Connections closed at once because their address had too many that had not finished their headers.",
               [("", Double(server.connectionsRefused))])
        metric("sightline_connections_evicted_total", "counter",
               "Connections that had not finished their headers, shut down oldest first to make room for new ones.",
               [("", Double(server.connectionsEvicted))])
        metric("sightline_requests_stalled_headers_total", "counter",
               "Requests answered 400 because their headers stopped coming after the request line.",
               [("", Double(server.headersStalled))])
        metric("sightline_storage_write_failures_total", "counter",
               "Writes to the data directory that failed (a full disk, permissions), by what they were for.",
               StorageArea.allCases.map { ("{area=\"\($0.rawValue)\"}", Double(stats.storageWriteFailures[$0] ?? 0)) })
        let sinkNames = sinks.keys.sorted()
        metric("sightline_sink_frames_delivered_total", "counter", "Frames the pipeline handed to each sink.",
               sinkNames.map { ("{sink=\"\($0)\"}", Double(sinks[$0]!.delivered)) })
        metric("sightline_sink_frames_skipped_total", "counter",
               "Frames a sink did not take because a newer one replaced them (stream: frames slow clients skipped).",
               sinkNames.map { ("{sink=\"\($0)\"}", Double(sinks[$0]!.skipped)) })
        metric("sightline_source_up", "gauge", "1 while the source delivers frames.", [("", status.state == .live ? 1 : 0)])
        metric("sightline_templates", "gauge", "Templates being looked for.", [("", Double(templates))])
        metric("sightline_uptime_seconds", "gauge", "Seconds since start.", [("", uptime)])

        out += "# HELP sightline_stage_seconds Time spent per frame in each pipeline stage.\n"
        out += "# TYPE sightline_stage_seconds histogram\n"
        for stage in StageName.allCases {
            histogram(&out, "sightline_stage_seconds", "stage=\"\(stage.rawValue)\"", stats.stages[stage] ?? LatencyHistogram())
        }
        out += "# HELP sightline_capture_to_send_seconds Age of a frame when it is written to a client.\n"
        out += "# TYPE sightline_capture_to_send_seconds histogram\n"
        histogram(&out, "sightline_capture_to_send_seconds", "", stats.captureToSend)
        return out
    }

    /// H.264 and JPEG on /ws (VideoStats).
    public static func render(video: VideoStats.Snapshot, encode: [VideoRendition: LatencyHistogram]) -> String {
        var out = ""
        func metric(_ name: String, _ type: String, _ help: String, _ samples: [(String, Double)]) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            for (labels, value) in samples { out += "\(name)\(labels) \(format(value))\n" }
        }
        metric("sightline_video_viewers", "gauge", "WebSocket viewers by format, and H.264 viewers by rendition.",
               [("{format=\"jpeg\"}", Double(video.viewers.jpeg)), ("{format=\"h264\"}", Double(video.viewers.h264))]
                + video.renditions.map { ("{format=\"h264\",rendition=\"\($0.name.rawValue)\"}", Double($0.viewers)) })
        metric("sightline_video_bytes_per_frame", "gauge", "Mean bytes of a frame over the last 150: the JPEG, the main H.264 access unit.",
               [("{format=\"jpeg\"}", video.bytesPerFrame.jpeg ?? 0), ("{format=\"h264\"}", video.bytesPerFrame.h264 ?? 0)])
        metric("sightline_video_frames_encoded_total", "counter",
               "Frames made H.264 for a rendition: encoded here, or the source's own passed on (see the next).",
               video.renditions.map { ("{rendition=\"\($0.name.rawValue)\"}", Double($0.frames)) })
        metric("sightline_video_passed_on_total", "counter",
               "The source's own H.264 access units passed on unencoded, by rendition, and of those the frames not analysed.",
               video.renditions.flatMap { [("{rendition=\"\($0.name.rawValue)\",analysed=\"true\"}",
                                            Double($0.passedOnUnits - $0.passedOnUnanalysed)),
                                           ("{rendition=\"\($0.name.rawValue)\",analysed=\"false\"}",
                                            Double($0.passedOnUnanalysed))] })
        metric("sightline_video_encoded_bytes_total", "counter", "Bytes of H.264 access units made, by rendition.",
               video.renditions.map { ("{rendition=\"\($0.name.rawValue)\"}", Double($0.bytes)) })
        metric("sightline_video_keyframes_total", "counter",
               "H.264 keyframes: scheduled by the interval, or requested (forced for a viewer joining or moved ahead).",
               video.renditions.flatMap { r in
                   [("{rendition=\"\(r.name.rawValue)\",reason=\"scheduled\"}", Double(r.keyframes.scheduled)),
                    ("{rendition=\"\(r.name.rawValue)\",reason=\"requested\"}", Double(r.keyframes.requested))]
               })
        metric("sightline_video_skips_to_keyframe_total", "counter",
               "Times an H.264 viewer fell behind and was moved ahead to the next keyframe.", [("", Double(video.skipsToKeyframe))])
        metric("sightline_video_encode_failures_total", "counter", "Frames the H.264 encoder failed on.",
               video.renditions.map { ("{rendition=\"\($0.name.rawValue)\"}", Double($0.encodeFailures)) })
        out += "# HELP sightline_video_encode_seconds Time to encode one frame to H.264, by rendition.\n"
        out += "# TYPE sightline_video_encode_seconds histogram\n"
        for rendition in VideoRendition.allCases {
            histogram(&out, "sightline_video_encode_seconds", "rendition=\"\(rendition.rawValue)\"",
                      encode[rendition] ?? LatencyHistogram())
        }
        return out
    }

    /// Each publish target, labelled by its place in the list (`index`, as
    /// in `publish:`) and its scheme, host and port only (`target`): anyone who
    /// may view reads `/metrics`, and a relay's path is usually its secret
    /// stream key (`/api/state` shows the rest to admins).
    public static func render(publish: [PublishStatus]) -> String {
        var out = ""
        func metric(_ name: String, _ type: String, _ help: String, _ value: (PublishStatus) -> Double) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            for (index, target) in publish.enumerated() {
                out += "\(name){target=\"\(labelValue(PublishTarget.location(target.url)))\",index=\"\(index)\"} "
                    + "\(format(value(target)))\n"
            }
        }
        metric("sightline_publish_up", "gauge", "1 while access units go out to the relay.") { $0.state == .publishing ? 1 : 0 }
        metric("sightline_publish_frames_total", "counter", "Access units sent to the relay.") { Double($0.frames) }
        metric("sightline_publish_bytes_total", "counter", "Bytes of access units sent to the relay.") { Double($0.bytes) }
        metric("sightline_publish_dropped_frames_total", "counter",
               "Frames that did not reach the relay (it was slow or away).") { Double($0.drops) }
        metric("sightline_publish_reconnects_total", "counter", "Connections to the relay after the first.") { Double($0.reconnects) }
        return out
    }

    /// Events and MQTT (appended while events are on).
    public static func render(events: EventStatus) -> String {
        var out = ""
        func metric(_ name: String, _ type: String, _ help: String, _ samples: [(String, Double)]) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            for (labels, value) in samples { out += "\(name)\(labels) \(format(value))\n" }
        }
        metric("sightline_events_stored", "gauge", "Events kept in <data-dir>/events.", [("", Double(events.store.events))])
        metric("sightline_events_open", "gauge", "Events under way (their thing in view).", [("", Double(events.store.open))])
        metric("sightline_events_stored_bytes", "gauge", "Bytes of event records and images.", [("", Double(events.store.bytes))])
        metric("sightline_event_writes_total", "counter", "Event states written, dropped while too many waited, or failed.",
               [("{result=\"saved\"}", Double(events.recorder.saved)), ("{result=\"dropped\"}", Double(events.recorder.dropped)),
                ("{result=\"failed\"}", Double(events.recorder.failed))])
        if let clips = events.clips {
            metric("sightline_clips_active", "gauge", "Events whose clip is being written.", [("", Double(clips.active))])
            metric("sightline_clips_files", "gauge", "Clip files being written (overlapping events share one).",
                   [("", Double(clips.files))])
            metric("sightline_clips_total", "counter", "Event clips finished whole, or stopped by a failed write.",
                   [("{result=\"completed\"}", Double(clips.completed)), ("{result=\"failed\"}", Double(clips.failed))])
            metric("sightline_clips_writing", "gauge", "1 while clips are written, 0 while writes fail (a full disk).",
                   [("", clips.state == "failing" ? 0 : 1)])
            metric("sightline_clips_lost_frames_total", "counter", "Frames the clip writer fell too far behind to keep.",
                   [("", Double(clips.lostFrames))])
            metric("sightline_clips_precapture_bytes", "gauge", "Encoded video kept for pre-capture.",
                   [("", Double(clips.preCaptureBytes))])
        }
        guard let mqtt = events.mqtt else { return out }
        metric("sightline_mqtt_connected", "gauge", "1 while connected to the broker.", [("", mqtt.connected ? 1 : 0)])
        metric("sightline_mqtt_messages_published_total", "counter", "Messages the broker acknowledged.",
               [("", Double(mqtt.published))])
        metric("sightline_mqtt_messages_dropped_total", "counter", "Event messages dropped because the queue was full.",
               [("", Double(mqtt.dropped))])
        metric("sightline_mqtt_queued", "gauge", "Messages waiting for the broker.",
               [("{kind=\"event\"}", Double(mqtt.queuedEvents)), ("{kind=\"state\"}", Double(mqtt.queuedStates))])
        metric("sightline_mqtt_connection_failures_total", "counter", "Connection attempts that failed or connections lost.",
               [("", Double(mqtt.failures))])
        return out
    }

    public static func render(recording: SegmentRecorder.Status) -> String {
        """
        # HELP sightline_recording_writing 1 while segments are written, 0 while writes fail (a full disk).
        # TYPE sightline_recording_writing gauge
        sightline_recording_writing \(recording.state == "failing" ? 0 : 1)
        # HELP sightline_recording_segments_total Segments finished, or failed writes.
        # TYPE sightline_recording_segments_total counter
        sightline_recording_segments_total{result="completed"} \(recording.segments)
        sightline_recording_segments_total{result="failed"} \(recording.failed)
        # HELP sightline_recording_bytes Bytes kept in <data-dir>/recordings.
        # TYPE sightline_recording_bytes gauge
        sightline_recording_bytes \(recording.bytes)

        """
    }

    private static func histogram(_ out: inout String, _ name: String, _ labels: String, _ h: LatencyHistogram) {
        let prefix = labels.isEmpty ? "" : labels + ","
        for bound in LatencyHistogram.prometheusBounds {
            out += "\(name)_bucket{\(prefix)le=\"\(format(bound))\"} \(h.count(atOrBelow: bound))\n"
        }
        out += "\(name)_bucket{\(prefix)le=\"+Inf\"} \(h.count)\n"
        let suffix = labels.isEmpty ? "" : "{\(labels)}"
        out += "\(name)_sum\(suffix) \(format(h.sum))\n"
        out += "\(name)_count\(suffix) \(h.count)\n"
    }

    /// A label value escaped as the text format wants it (backslash, quote, new line).
    static func labelValue(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    private static func format(_ value: Double) -> String {
        if value == value.rounded() && abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
