import Foundation
import SightlinePipeline

/// What a `/ws` client asked for in its query: `video=jpeg` (or nothing) or
/// `video=h264`, and for H.264 `rendition=auto` (the default: the server
/// moves a viewer that cannot keep up to `low`, and back), `main` or `low`.
public enum StreamFormat: Equatable, Sendable {
    case jpeg
    case h264(pinned: VideoRendition?)

    /// A query that asks for something this server does not send: the answer (400) before the upgrade.
    public struct Refused: Error {
        public let response: HTTPResponse
    }

    /// The format a query asks for, or the 400 answer it gets before the upgrade.
    public static func parse(_ query: [String: String], h264Available: Bool, lowAvailable: Bool)
        -> Result<StreamFormat, Refused> {
        switch query["video"] {
        case nil, "jpeg":
            return .success(.jpeg)
        case "h264":
            guard h264Available else {
                return .failure(Refused(response: .error(400, "H.264 is off on this server", detail: "video.h264 is false in its config; use video=jpeg")))
            }
            switch query["rendition"] {
            case nil, "auto": return .success(.h264(pinned: nil))
            case "main": return .success(.h264(pinned: .main))
            case "low" where lowAvailable: return .success(.h264(pinned: .low))
            case let other?:
                return .failure(Refused(response: .error(400, "unknown rendition", detail: "rendition=\(other): use auto, main"
                                       + (lowAvailable ? " or low" : " (low is off on this server)"))))
            }
        case let other?:
            return .failure(Refused(response: .error(400, "unknown video format", detail: "video=\(other): use video=jpeg or video=h264")))
        }
    }
}
