import Foundation

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

    public init(store: EventStore, status: @escaping @Sendable () -> EventStatus, namer: EventNamer? = nil) {
        self.store = store
        self.status = status
        self.namer = namer
    }

    private struct NameBody: Decodable { var name: String }

    struct Page: Encodable {
        var events: [EventRecord]
        var next: String?
    }

    /// Its entries in the route table (`/stats` before `{id}`).
    public var routes: [Route] {
        [
            Route(.get, "/api/events", access: .viewer) { [store] request in
                switch EventQuery.parse(request.query) {
                case .success(let query):
                    let (events, next) = store.list(query)
                    return .json(Page(events: events, next: next))
                case .failure(let problem):
                    return .error(400, problem.error, detail: problem.detail)
                }
            },
            Route(.get, "/api/events/stats", access: .viewer) { [status] _ in .json(status()) },
            Route(.get, "/api/events/{id}", access: .viewer) { [store] request in
                Self.withID(request) { id in
                    guard let event = store.record(id) else { return Self.missing(id) }
                    return .json(["event": event])
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

    /// One answer reads at most this much of a clip; a longer range gets
    /// its first part (206 says which), and players ask for the rest.
    static let maxRangeBytes = 8 << 20
    /// A GET without a range reads the whole clip, up to this.
    static let maxWholeBytes = 512 << 20

    private static func clip(_ store: EventStore, _ request: HTTPRequest) -> HTTPResponse {
        withID(request) { id in
            guard let record = store.record(id) else { return missing(id) }
            guard record.clip != nil, let file = FileHandle(forReadingAtPath: store.clipPath(id)) else {
                return .error(404, "no clip", detail: "event \(id) has no clip (clips are off, or it could not be written)")
            }
            defer { try? file.close() }
            guard let end = try? file.seekToEnd() else { return .error(500, "cannot read the clip") }
            let size = Int(end)
            if size == 0 {
                return .error(404, "no clip yet", detail: "event \(id)'s clip has no video yet")
            }
            var headers: [(String, String)] = [("accept-ranges:", "bytes"), ("cache-control:", "no-cache")]
            var status = 200
            var range = 0...(size - 1)
            switch ByteRange.parse(request.headers["range"], size: size) {
            case .unsatisfiable:
                var answer = HTTPResponse.error(416, "range not satisfiable", detail: "the clip has \(size) bytes")
                answer.headers = [("content-range:", "bytes */\(size)"), ("accept-ranges:", "bytes")]
                return answer
            case .partial(let wanted):
                status = 206
                range = wanted.lowerBound...min(wanted.upperBound, wanted.lowerBound + maxRangeBytes - 1)
                headers.append(("content-range:", "bytes \(range.lowerBound)-\(range.upperBound)/\(size)"))
            case .whole:
                guard size <= maxWholeBytes else {
                    return .error(413, "clip too large to send whole", detail: "ask for byte ranges (Range: bytes=0-)")
                }
            }
            if request.method == .head {
                var answer = HTTPResponse.data(Data(), contentType: "video/mp4", status: status, headers: headers)
                answer.headLength = range.count
                return answer
            }
            do {
                try file.seek(toOffset: UInt64(range.lowerBound))
                let data = try file.read(upToCount: range.count) ?? Data()
                guard data.count == range.count else { return .error(500, "cannot read the clip", detail: "it changed while read") }
                return .data(data, contentType: "video/mp4", status: status, headers: headers)
            } catch {
                return .error(500, "cannot read the clip", detail: StorageError(error, path: "")?.reason.description ?? "read failed")
            }
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
}
