import Foundation
import SightlineVision
import SightlinePipeline
import SightlineHTTP
import SightlineEvents

/// The event endpoints:
/// - `GET /api/events?kind=&label=|name=&from=&to=&before=&limit=`: a page,
///   newest first, with `next` (pass it as `before`) when there is more;
/// - `GET /api/events/stats`: the recorder, the tracker and MQTT;
/// - `GET /api/events/{id}`, `.../snapshot.jpg` (the best frame, as it was
///   streamed), `.../crop.jpg` (its box);
/// - `DELETE /api/events/{id}` (admin);
/// - `POST /api/events/{id}/name` `{"name": "Ada"}` (admin): "name this
///   person" from a face event, learned from its stored best frame
///   (`EventNamer`); 404 while faces are off;
/// - `GET`/`HEAD /api/events/{id}/clip.mp4`: the event's clip (fragmented
///   MP4; one still being written ends at its last fragment so far), with
///   byte ranges (206, 416) for players that seek.
///
/// Threads: lists, records and stats come from memory and answer inline on
/// the libwebsockets thread. The two images are files, read on the request
/// worker (a stalled disk must not stall viewers); a browser asks for a few
/// thumbnails at a time (six connections per host), well inside the worker's
/// 16 places, and a refused one is retried by the next poll. Deleting touches
/// three files behind the recorder's disk lock, also on the worker.
public struct EventAPI: Sendable {
    public let store: EventStore
    public let status: @Sendable () -> EventStatus
    public let namer: EventNamer?
    /// With continuous recording: the segments an event's span lies in (`recordings` in `GET /api/events/{id}`).
    public let recordings: (@Sendable (Double, Double) -> [RecordingReference])?

    public init(store: EventStore, status: @escaping @Sendable () -> EventStatus, namer: EventNamer? = nil,
                recordings: (@Sendable (Double, Double) -> [RecordingReference])? = nil) {
        self.store = store
        self.status = status
        self.namer = namer
        self.recordings = recordings
    }

    struct Detail: Encodable {
        var event: Listed
        var recordings: [RecordingReference]?
    }

    private struct NameBody: Decodable { var name: String }

    /// An event as the API shows it: the record, and `has_clip` (DESIGN.md's and Frigate's name).
    struct Listed: Encodable {
        let record: EventRecord
        enum Key: String, CodingKey { case has_clip }

        func encode(to encoder: Encoder) throws {
            try record.encode(to: encoder)
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(record.clip != nil, forKey: .has_clip)
        }
    }

    struct Page: Encodable {
        var events: [Listed]
        var next: String?
    }

    /// Its entries in the route table (`/stats` before `{id}`).
    public var routes: [Route] {
        [
            Route(.get, "/api/events", access: .viewer) { [store] request in
                switch EventQuery.parse(request.query) {
                case .success(let query):
                    let (events, next) = store.list(query)
                    return .json(Page(events: events.map(Listed.init), next: next))
                case .failure(let problem):
                    return .error(400, problem.error, detail: problem.detail)
                }
            },
            Route(.get, "/api/events/stats", access: .viewer) { [status] _ in .json(status()) },
            Route(.get, "/api/events/{id}", access: .viewer) { [store, recordings] request in
                Self.withID(request) { id in
                    guard let event = store.record(id) else { return Self.missing(id) }
                    let span = recordings?(event.startTime, event.endTime ?? event.lastTime)
                    return .json(Detail(event: Listed(record: event), recordings: span))
                }
            },
            Route(.get, "/api/events/{id}/snapshot.jpg", access: .viewer, .worker) { [store] request in
                Self.image(store, request, crop: false)
            },
            Route(.get, "/api/events/{id}/crop.jpg", access: .viewer, .worker) { [store] request in
                Self.image(store, request, crop: true)
            },
            Route(.get, "/api/events/{id}/clip.mp4", access: .viewer, .worker) { [store] request in
                Self.clip(store, request)
            },
            Route(.delete, "/api/events/{id}", access: .admin, .worker) { [store] request in
                Self.withID(request) { id in
                    store.delete(id) ? .json(["deleted": id]) : Self.missing(id)
                }
            },
            Route(.post, "/api/events/{id}/name", access: .admin, .worker) { [namer] request in
                Self.withID(request) { id in
                    guard let namer else {
                        return .error(404, "faces are off", detail: "naming needs face recognition (faces.enabled)")
                    }
                    guard request.body.count <= 4096, let body = try? JSONDecoder().decode(NameBody.self, from: request.body) else {
                        return .error(400, "malformed JSON", detail: #"send a JSON body like {"name": "Ada"}"#)
                    }
                    switch PersonName.validated(body.name).flatMap({ namer.name(eventID: id, as: $0) }) {
                    case .success(let named): return .json(named)
                    case .failure(let error): return .error(error.status, error.error, detail: error.detail)
                    }
                }
            },
        ]
    }

    private static func image(_ store: EventStore, _ request: HTTPRequest, crop: Bool) -> HTTPResponse {
        withID(request) { id in
            guard store.record(id) != nil else { return missing(id) }
            guard let data = store.image(id, crop: crop) else {
                return .error(404, crop ? "no crop" : "no snapshot",
                              detail: "event \(id) has no \(crop ? "crop" : "snapshot") (not written yet, or the box was outside the frame)")
            }
            return .data(data, contentType: "image/jpeg", headers: [("cache-control:", "no-cache")])
        }
    }

    private static func clip(_ store: EventStore, _ request: HTTPRequest) -> HTTPResponse {
        withID(request) { id in
            guard let record = store.record(id) else { return missing(id) }
            guard record.clip != nil else {
                return .error(404, "no clip", detail: "event \(id) has no clip (clips are off, or it could not be written)")
            }
            return .file(store.clipPath(id), contentType: "video/mp4", request: request,
                         missing: .error(404, "no clip", detail: "event \(id)'s clip file is gone"))
        }
    }

    private static func withID(_ request: HTTPRequest, _ body: (String) -> HTTPResponse) -> HTTPResponse {
        let id = request.parameters["id"] ?? ""
        guard EventRecord.isValidID(id) else {
            return .error(400, "bad event id", detail: "'\(id.prefix(40))' is not an event id (like 1763802000.123456-ab12cd)")
        }
        return body(id)
    }

    private static func missing(_ id: String) -> HTTPResponse {
        .error(404, "no such event", detail: "\(id) (deleted, expired, or never stored)")
    }
}

/// `GET /api/events/stats`.
public struct EventStatus: Encodable, Sendable {
    public var camera: String
    public var store: EventStore.Totals
    public var recorder: EventRecorder.Counts
    public var tracker: EventSink.TrackerCounts
    /// Absent while MQTT is off.
    public var mqtt: MQTTPublisher.Status?
    /// Absent while clips are off.
    public var clips: ClipRecorder.Status?

    public init(camera: String, store: EventStore.Totals, recorder: EventRecorder.Counts, tracker: EventSink.TrackerCounts,
                mqtt: MQTTPublisher.Status? = nil, clips: ClipRecorder.Status? = nil) {
        self.camera = camera
        self.store = store
        self.recorder = recorder
        self.tracker = tracker
        self.mqtt = mqtt
        self.clips = clips
    }
}
