import Foundation
import SightlineVision

/// A parsed `--source` value (see DESIGN.md, "Sources").
public enum SourceSpec: Sendable, Equatable {
    case auto
    case demo(DemoSource.Options)
    case v4l2(path: String)
    case file(path: String, pace: FilePace, fps: Double?)
    case stream(url: String)

    public static func parse(_ text: String) throws -> SourceSpec {
        let (head, query) = split(text)
        switch head {
        case "auto":
            return .auto
        case "demo":
            var options = DemoSource.Options()
            for (key, value) in query {
                switch key {
                case "size":
                    let parts = value.split(separator: "x").compactMap { Int($0) }
                    guard parts.count == 2, parts[0] >= 160, parts[1] >= 120, parts[0] <= 3840, parts[1] <= 2160 else {
                        throw SourceSpecError("demo size must be WxH between 160x120 and 3840x2160, got '\(value)'")
                    }
                    options.width = parts[0]
                    options.height = parts[1]
                case "fps":
                    guard let fps = Double(value), fps > 0, fps <= 240 else {
                        throw SourceSpecError("demo fps must be in (0, 240], got '\(value)'")
                    }
                    options.fps = fps
                case "seed":
                    guard let seed = UInt64(value) else { throw SourceSpecError("demo seed must be a whole number") }
                    options.seed = seed
                case "noise":
                    guard let noise = Double(value), noise >= 0 else { throw SourceSpecError("demo noise must be >= 0") }
                    options.noiseSigma = noise
                case "face":
                    guard value == "0" || value == "1" else { throw SourceSpecError("demo face must be 0 or 1, got '\(value)'") }
                    options.showFace = value == "1"
                default:
                    throw SourceSpecError("unknown demo option '\(key)' (size, fps, seed, noise, face)")
                }
            }
            return .demo(options)
        default:
            break
        }
        if head.hasPrefix("v4l2:") {
            let path = String(head.dropFirst(5))
            guard path.hasPrefix("/dev/") else { throw SourceSpecError("v4l2 source needs a device path like v4l2:/dev/video0") }
            return .v4l2(path: path)
        }
        if head.hasPrefix("file:") {
            let path = String(head.dropFirst(5))
            guard !path.isEmpty else { throw SourceSpecError("file source needs a path: file:PATH") }
            var pace = FilePace.native
            var fps: Double?
            for (key, value) in query {
                switch key {
                case "pace":
                    guard let parsed = FilePace(rawValue: value) else { throw SourceSpecError("pace must be native or max") }
                    pace = parsed
                case "fps":
                    guard let parsed = Double(value), parsed > 0, parsed <= 240 else {
                        throw SourceSpecError("fps must be in (0, 240]")
                    }
                    fps = parsed
                default:
                    throw SourceSpecError("unknown file option '\(key)' (pace, fps)")
                }
            }
            return .file(path: path, pace: pace, fps: fps)
        }
        for scheme in ["rtsp://", "rtsps://", "http://", "https://", "rtmp://", "udp://", "tcp://"] where text.hasPrefix(scheme) {
            return .stream(url: text)
        }
        throw SourceSpecError("unknown source '\(text)': use auto, demo, v4l2:/dev/videoN, file:PATH or a stream URL")
    }

    /// What a viewer is told of a source: the spec without the server's paths
    /// or a stream's credentials and path (`file:front.avi`,
    /// `rtsp://cam.local:554`); demo, auto and camera specs as they are. The
    /// full spec is for admins.
    public static func publicForm(_ text: String) -> String {
        switch try? parse(text) {
        case .file(let path, _, _)?: return "file:" + (path as NSString).lastPathComponent
        case .stream(let url)?: return publicLocation(url)
        default: return text
        }
    }

    /// What the log says of a spec: a stream URL with its password (and any
    /// query value whose name says it is a secret: `password`, `token`,
    /// `key`, ...) as `***`, its user, host, path and the rest kept for the
    /// admin reading the log (`rtsp://u:***@cam.local/x`); other specs as
    /// they are. Every log line that names a source goes through this.
    public static func logForm(_ text: String) -> String {
        guard case .stream(let url)? = try? parse(text) else { return text }
        return maskingSecrets(url)
    }

    /// `text` (an error's detail, say) with spec's stream URL in it as `logForm` gives it.
    public static func redactForLog(_ text: String, spec: String) -> String {
        guard case .stream(let url)? = try? parse(spec) else { return text }
        return text.replacingOccurrences(of: url, with: maskingSecrets(url))
    }

    /// Query parameters whose value is masked in logs (matched as parts of the lower-cased name).
    static let secretQueryNames = ["pass", "pwd", "token", "secret", "key", "auth", "sig", "credential"]

    static func maskingSecrets(_ url: String) -> String {
        guard let scheme = url.range(of: "://") else { return url }
        let rest = url[scheme.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var masked = String(url[..<scheme.upperBound])
        if let at = authority.lastIndex(of: "@") {
            let userinfo = authority[..<at]
            masked += userinfo.firstIndex(of: ":").map { userinfo[..<$0] + ":***" } ?? String(userinfo)
            masked += authority[at...]
        } else {
            masked += authority
        }
        var tail = rest[authorityEnd...]
        var fragment = Substring("")
        if let hash = tail.firstIndex(of: "#") {
            fragment = tail[hash...]
            tail = tail[..<hash]
        }
        guard let mark = tail.firstIndex(of: "?") else { return masked + tail + fragment }
        let pairs = tail[tail.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            guard let equals = pair.firstIndex(of: "=") else { return String(pair) }
            let name = pair[..<equals].lowercased()
            return secretQueryNames.contains(where: { name.contains($0) }) ? pair[..<equals] + "=***" : String(pair)
        }
        return masked + tail[...mark] + pairs.joined(separator: "&") + fragment
    }

    /// A stream URL's scheme, host and port only (no user, password, path or query).
    static func publicLocation(_ url: String) -> String {
        guard let parts = URLComponents(string: url), let scheme = parts.scheme, let host = parts.host else {
            return url.split(separator: ":", maxSplits: 1).first.map { "\($0) stream" } ?? "stream"
        }
        return "\(scheme)://\(host)" + (parts.port.map { ":\($0)" } ?? "")
    }

    /// The text a viewer gets in place of a spec's server path or URL inside other text (an error's detail).
    package static func redact(_ text: String, spec: String) -> String {
        switch try? parse(spec) {
        case .file(let path, _, _)?: return text.replacingOccurrences(of: path, with: (path as NSString).lastPathComponent)
        case .stream(let url)?: return text.replacingOccurrences(of: url, with: publicLocation(url))
        default: return text
        }
    }

    private static func split(_ text: String) -> (String, [(String, String)]) {
        guard let mark = text.firstIndex(of: "?"), !text.contains("://") else { return (text, []) }
        let pairs = text[text.index(after: mark)...].split(separator: "&").map { item -> (String, String) in
            let kv = item.split(separator: "=", maxSplits: 1)
            return (String(kv[0]), kv.count > 1 ? String(kv[1]) : "")
        }
        return (String(text[..<mark]), pairs)
    }
}

public struct SourceSpecError: Error, CustomStringConvertible, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
