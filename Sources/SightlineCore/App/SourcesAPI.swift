import Foundation
import SightlinePipeline
import SightlineHTTP
import SightlineEvents

/// `GET /api/sources` (what the browser's selector offers: the demo, the
/// cameras found, and the configured files and URLs) and `POST /api/source
/// {"spec": ...}` (switch the running source to one of them, as the
/// tutorials switched between the front and back camera).
///
/// Threads: both run on the RequestWorker (listing probes /dev/video*; a
/// switch makes the new source); the switch itself happens on the capture
/// thread at the next frame boundary (CaptureLoop.switchSource).
public struct SourcesAPI: Sendable {
    public struct Offer: Codable, Sendable, Equatable {
        public var spec: String
        public var label: String
        public var kind: String
    }

    let configured: [String]
    let current: @Sendable () -> String
    let switchTo: @Sendable (String) throws -> Void
    /// Whether a request comes from an admin, who sees full specs; viewers get
    /// them without server paths (`SourceSpec.publicForm`).
    let isAdmin: @Sendable (HTTPRequest) -> Bool
    /// nil when a spec may be switched to (`offered`: it is among the offers); else why not.
    /// The default takes the offered ones only.
    let admits: @Sendable (_ spec: String, _ offered: Bool) -> SourcePolicy.Refusal?

    public init(configured: [String], current: @escaping @Sendable () -> String,
                switchTo: @escaping @Sendable (String) throws -> Void,
                isAdmin: @escaping @Sendable (HTTPRequest) -> Bool = { _ in true },
                admits: @escaping @Sendable (_ spec: String, _ offered: Bool) -> SourcePolicy.Refusal? = { spec, offered in
                    offered ? nil : SourcePolicy.Refusal(error: "source not offered",
                                                         detail: "'\(spec)' is not among GET /api/sources; "
                                                             + "start the server with --offer-source to add it")
                }) {
        self.configured = configured
        self.current = current
        self.switchTo = switchTo
        self.isAdmin = isAdmin
        self.admits = admits
    }

    /// Its entries in the route table.
    public var routes: [Route] {
        [
            Route(.get, "/api/sources", access: .viewer, .worker) { [self] request in
                let listing = Listing(current: current(), sources: offers())
                return .json(isAdmin(request) ? listing : listing.forViewer())
            },
            Route(.post, "/api/source", access: .admin, .worker) { [self] request in switchSource(request.body) },
        ]
    }

    struct Listing: Encodable {
        var current: String
        var sources: [Offer]

        func forViewer() -> Listing {
            Listing(current: SourceSpec.publicForm(current), sources: sources.map {
                Offer(spec: SourceSpec.publicForm($0.spec), label: SourceSpec.redact($0.label, spec: $0.spec), kind: $0.kind)
            })
        }
    }
    private struct SwitchBody: Decodable { var spec: String }

    public func offers() -> [Offer] {
        var offers = [Offer(spec: "demo", label: "Demo scene", kind: "demo")]
        offers += V4L2Discovery.captureDevices().map {
            Offer(spec: "v4l2:\($0.path)", label: "\($0.card) (\($0.path))", kind: "v4l2")
        }
        for spec in configured + [current()] where !offers.contains(where: { $0.spec == spec }) {
            offers.append(Self.offer(for: spec))
        }
        return offers
    }

    static func offer(for spec: String) -> Offer {
        switch try? SourceSpec.parse(spec) {
        case .file(let path, _, _)?: return Offer(spec: spec, label: (path as NSString).lastPathComponent, kind: "file")
        case .stream?: return Offer(spec: spec, label: spec, kind: "stream")
        case .v4l2(let path)?: return Offer(spec: spec, label: path, kind: "v4l2")
        case .demo?: return Offer(spec: spec, label: "Demo scene (\(spec))", kind: "demo")
        case .auto?, nil: return Offer(spec: spec, label: spec, kind: "auto")
        }
    }

    private func switchSource(_ body: Data) -> HTTPResponse {
        guard let request = try? JSONDecoder().decode(SwitchBody.self, from: body) else {
            return .error(400, "bad body", detail: "send {\"spec\": \"...\"} with one of GET /api/sources")
        }
        if let refusal = admits(request.spec, offers().contains(where: { $0.spec == request.spec })) {
            return .error(400, refusal.error, detail: refusal.detail)
        }
        do {
            try switchTo(request.spec)
            return .json(["current": request.spec])
        } catch {
            return .error(422, "cannot switch", detail: "\(error)")
        }
    }
}
