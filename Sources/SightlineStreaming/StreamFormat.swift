import Foundation
import SightlinePipeline
import SightlineHTTP

/// What a `/ws` client asked for in its query: `video=jpeg` (or nothing),
/// `video=h264` (Annex B access units, for WebCodecs) or `video=fmp4` (the
/// same units as fragmented MP4, for Media Source Extensions), and for H.264 `rendition=auto` (the default: the server
/// moves a viewer that cannot keep up to `low`, and back), `main` or `low`.
public enum StreamFormat: Equatable, Sendable {
    case jpeg
    case h264(pinned: VideoRendition?)
    case fmp4(pinned: VideoRendition?)

    /// The rendition an H.264 format (either wire) pins; nil for JPEG or auto.
    package var video: (pinned: VideoRendition?, fmp4: Bool)? {
        switch self {
        case .jpeg: return nil
        case .h264(let pinned): return (pinned, false)
        case .fmp4(let pinned): return (pinned, true)
        }
    }

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
        case let format? where format == "h264" || format == "fmp4":
            let make: (VideoRendition?) -> StreamFormat = format == "h264" ? { .h264(pinned: $0) } : { .fmp4(pinned: $0) }
            guard h264Available else {
                return .failure(Refused(response: .error(400, "H.264 is off on this server", detail: "video.h264 is false in its config; use video=jpeg")))
            }
            switch query["rendition"] {
            case nil, "auto": return .success(make(nil))
            case "main": return .success(make(.main))
            case "low" where lowAvailable: return .success(make(.low))
            case let other?:
                return .failure(Refused(response: .error(400, "unknown rendition", detail: "rendition=\(other): use auto, main"
                                       + (lowAvailable ? " or low" : " (low is off on this server)"))))
            }
        case let other?:
            return .failure(Refused(response: .error(400, "unknown video format", detail: "video=\(other): use video=jpeg, video=h264 or video=fmp4")))
        }
    }
}
