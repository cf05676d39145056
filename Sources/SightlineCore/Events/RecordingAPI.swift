import Foundation
import SightlineSupport
import SightlineVision
import SightlinePipeline
import SightlineHTTP
import SightlineEvents

/// The recordings endpoints (continuous recording on):
/// - `GET /api/recordings?from=&to=` (Unix seconds, both optional): the
///   segments overlapping that span, oldest first, and the recorder's status;
/// - `GET`/`HEAD /api/recordings/{name}`: one segment (fragmented MP4, SEI
///   boxes in every frame), with byte ranges.
///
/// Threads: the list answers from memory on the service thread; the file
/// is read on the request worker.
public struct RecordingAPI: Sendable {
    public let recorder: SegmentRecorder

    public init(recorder: SegmentRecorder) { self.recorder = recorder }

    struct Listing: Encodable {
        var segments: [RecordingStore.Segment]
        var status: SegmentRecorder.Status
    }

    public var routes: [Route] {
        [
            Route(.get, "/api/recordings", access: .viewer) { [recorder] request in
                switch EventQuery.timeRange(request.query) {
                case .success(let range):
                    return .json(Listing(segments: recorder.store.list(from: range.from, to: range.to), status: recorder.snapshot))
                case .failure(let problem):
                    return .error(400, problem.error, detail: problem.detail)
                }
            },
            Route(.get, "/api/recordings/{name}", access: .viewer, .worker) { [recorder] request in
                let name = request.parameters["name"] ?? ""
                guard RecordingStore.parse(name) != nil else {
                    return .error(400, "bad recording name", detail: "names look like 1763802000.123_60033.mp4")
                }
                let missing = HTTPResponse.error(404, "no such recording", detail: "\(name) (deleted by retention, or never made)")
                guard recorder.store.segment(named: name) != nil else { return missing }
                return .file(recorder.store.path(name), contentType: "video/mp4", request: request, missing: missing)
            },
        ]
    }

    /// Where an event's span lies in the recordings: each segment it
    /// overlaps and the offset of the event's start in it (seconds, 0 when it
    /// began before the segment). For `recordings` in an event's JSON.
    public func references(from start: Double, to end: Double) -> [RecordingReference] {
        recorder.store.list(from: start, to: end).map {
            RecordingReference(name: $0.name, path: "/api/recordings/\($0.name)", offset: max(0, (start - $0.start).rounded(toPlaces: 3)))
        }
    }
}

/// An event's place in a recording segment.
public struct RecordingReference: Codable, Sendable, Equatable {
    public var name: String
    public var path: String
    public var offset: Double
}
