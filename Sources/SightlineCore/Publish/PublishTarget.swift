import Foundation
import SightlineSupport
import SightlineVision
import SightlinePipeline
import SightlineHTTP

/// A relay the H.264 stream is published to (config `publish:`): `rtsp://`
/// (ANNOUNCE and RECORD over TCP) or `rtmp://`/`rtmps://` (FLV), through
/// libavformat. Credentials come in the URL (`rtsp://user:pass@host/...`)
/// or from the environment: `${NAME}` anywhere in the URL is replaced by
/// that variable's value (`rtmp://host/live/${SIGHTLINE_STREAM_KEY}`).
/// Neither is ever shown: `shown` is the URL as configured, placeholders
/// kept and any user and password left out.
public struct PublishTarget: Sendable, Equatable {
    /// The URL to connect to, secrets in.
    public let url: String
    /// libavformat's muxer: `rtsp` or `flv`.
    public let format: String
    /// For logs, `/api/state` and `/metrics`.
    public let shown: String

    public static func parse(_ configured: String, environment: [String: String]) throws -> PublishTarget {
        let text = configured.trimmingCharacters(in: .whitespaces)
        let lower = text.lowercased()
        let format: String
        if lower.hasPrefix("rtsp://") {
            format = "rtsp"
        } else if lower.hasPrefix("rtmp://") || lower.hasPrefix("rtmps://") {
            format = "flv"
        } else {
            throw ConfigError.invalid("publish: \(shownForm(text)) is not an rtsp:// or rtmp:// URL")
        }
        let url = try substitute(text, environment: environment)
        guard let parts = URLComponents(string: url), let host = parts.host, !host.isEmpty else {
            throw ConfigError.invalid("publish: \(shownForm(text)) has no host")
        }
        return PublishTarget(url: url, format: format, shown: shownForm(text))
    }

    /// `${NAME}` replaced by the environment's value; a missing variable is an error.
    static func substitute(_ text: String, environment: [String: String]) throws -> String {
        var result = ""
        var rest = Substring(text)
        while let open = rest.range(of: "${") {
            result += rest[..<open.lowerBound]
            guard let close = rest[open.upperBound...].firstIndex(of: "}") else {
                throw ConfigError.invalid("publish: an unclosed ${ in \(shownForm(text))")
            }
            let name = String(rest[open.upperBound..<close])
            guard let value = environment[name] else {
                throw ConfigError.invalid("publish: \(shownForm(text)) needs the environment variable \(name), which is not set")
            }
            result += value
            rest = rest[rest.index(after: close)...]
        }
        return result + rest
    }

    /// Only the scheme, host and port of a URL (`rtmp://host:1935`): no
    /// user, password, path (an RTMP stream key) or query. For `/metrics`,
    /// which anyone who may view reads. Works on `shown` forms too (a
    /// `${NAME}` placeholder in the path goes with the path).
    public static func location(_ text: String) -> String {
        guard let scheme = text.range(of: "://") else { return "(not a URL)" }
        let afterScheme = text[scheme.upperBound...]
        let authorityEnd = afterScheme.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? afterScheme.endIndex
        let authority = afterScheme[..<authorityEnd]
        let host = authority.lastIndex(of: "@").map { authority[authority.index(after: $0)...] } ?? authority
        return String(text[..<scheme.upperBound]) + host
    }

    /// The URL without its user information (`scheme://host:port/path`).
    static func shownForm(_ text: String) -> String {
        guard let scheme = text.range(of: "://") else { return "(not a URL)" }
        let afterScheme = text[scheme.upperBound...]
        let authorityEnd = afterScheme.firstIndex(of: "/") ?? afterScheme.endIndex
        let authority = afterScheme[..<authorityEnd]
        let host = authority.lastIndex(of: "@").map { authority[authority.index(after: $0)...] } ?? authority
        return String(text[..<scheme.upperBound]) + host + afterScheme[authorityEnd...]
    }
}
