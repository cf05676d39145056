import Foundation
import SightlineSupport
import Glibc
import SightlinePipeline

/// Which sources an admin may name at runtime. Adding a camera (`POST
/// /api/cameras`) and switching one's source (`POST /api/source`, `POST
/// /api/cameras/NAME/source`) follow these same rules, so the two agree:
///
/// - what the config and flags name (the operator wrote them: every
///   camera's `source`, `source.offer`, `--source`, `--offer-source`), and
///   what `GET /api/sources` offers (those, `demo`, the cameras found);
/// - `demo` and `auto`;
/// - V4L2 capture devices only: `/dev/videoN`, or a `/dev/v4l/by-id/` or
///   `/dev/v4l/by-path/` link to one (never `/dev/mem` and the like);
/// - files only under a media folder (`media:` in the config, `--media-dir`,
///   and always the folders of the files the config and flags name), never
///   in the data directory (the token, the state); symlinks and `..` are
///   resolved before the check;
/// - stream URLs, except this server itself.
///
/// This server itself (a loopback, "any" or this machine's address or name
/// at the server's own port) is refused everywhere, from the config too
/// (`ServeSettings.validate`): a camera reading its own stream feeds on
/// itself and never settles.
public struct SourcePolicy: Sendable {
    /// Why a spec is refused: `error` and `detail` of the 400.
    public struct Refusal: Error, CustomStringConvertible, Equatable {
        public let error: String
        public let detail: String
        public var description: String { detail }

        public init(error: String, detail: String) {
            self.error = error
            self.detail = detail
        }
    }

    /// Media folders as given (checked resolved).
    public let mediaFolders: [String]
    public let dataDir: String
    /// Specs the config and flags name.
    public let trusted: Set<String>
    /// The server's own host setting and port (0: not known yet).
    public let host: String
    public let port: Int
    /// This machine's names and addresses (`localNames()`).
    public let localNames: Set<String>

    public init(mediaFolders: [String], dataDir: String, trusted: Set<String>, host: String, port: Int,
                localNames: Set<String> = SourcePolicy.localNames()) {
        self.mediaFolders = mediaFolders
        self.dataDir = dataDir
        self.trusted = trusted
        self.host = host
        self.port = port
        self.localNames = localNames
    }

    /// The rules for a server with `settings` (the top level's: its `cameras`
    /// name the config's cameras) bound to `port`.
    public init(settings: ServeSettings, port: Int, localNames: Set<String> = SourcePolicy.localNames()) {
        self.init(mediaFolders: settings.mediaFoldersInEffect, dataDir: settings.dataDir,
                  trusted: Set(settings.configuredSources), host: settings.host, port: port, localNames: localNames)
    }

    /// nil when `spec` may be used; else why not. `offered`: it is among `GET /api/sources`.
    public func refusal(_ spec: String, offered: Bool = false) -> Refusal? {
        let parsed: SourceSpec
        do {
            parsed = try SourceSpec.parse(spec)
        } catch {
            return Refusal(error: "bad source", detail: "\(error)")
        }
        if let refusal = Self.selfRefusal(parsed, host: host, port: port, localNames: localNames) { return refusal }
        if offered || trusted.contains(spec) { return nil }
        switch parsed {
        case .auto, .demo, .stream:
            return nil
        case .v4l2(let path):
            guard Self.isCaptureDevice(path) else {
                return Refusal(error: "source not allowed", detail: "'\(path)' is not a video capture device: a V4L2 source "
                               + "is /dev/videoN, or a /dev/v4l/by-id/ or /dev/v4l/by-path/ link to one")
            }
            return nil
        case .file(let path, _, _):
            return fileRefusal(path)
        }
    }

    // MARK: - Files

    private func fileRefusal(_ path: String) -> Refusal? {
        let how = "file sources must be under a media folder (media: in the config, or --media-dir; the folders "
            + "of the files the config names count too)"
        guard let real = Self.resolved(path) else {
            return Refusal(error: "source not allowed", detail: "'\(path)' has '..' after a folder that does not exist; \(how)")
        }
        if let data = Self.resolved(dataDir), Self.isInside(real, data) {
            return Refusal(error: "source not allowed", detail: "'\(path)' is in the data directory (\(dataDir)), which holds "
                           + "the server's token and state: never a source")
        }
        let folders = mediaFolders.compactMap(Self.resolved)
        guard !folders.isEmpty else {
            return Refusal(error: "source not allowed", detail: "no media folder is configured; \(how)")
        }
        guard folders.contains(where: { Self.isInside(real, $0) }) else {
            return Refusal(error: "source not allowed", detail: "'\(path)' (\(real)) is in no media folder; \(how): "
                           + mediaFolders.joined(separator: ", "))
        }
        return nil
    }

    /// `path` absolute, with every symlink and `..` resolved: the deepest part
    /// that exists by `realpath`, the rest appended; nil when that rest has `..`.
    static func resolved(_ path: String) -> String? {
        let absolute = path.hasPrefix("/") ? path
            : (FileManager.default.currentDirectoryPath as NSString).appendingPathComponent(path)
        var head = absolute
        var rest: [String] = []
        while true {
            if let real = realpath(head, nil) {
                defer { free(real) }
                let base = String(cString: real)
                let tail = rest.reversed().filter { $0 != "." && !$0.isEmpty }
                guard !tail.contains("..") else { return nil }
                return tail.isEmpty ? base : (base == "/" ? "" : base) + "/" + tail.joined(separator: "/")
            }
            guard head != "/", !head.isEmpty else { return nil }
            rest.append((head as NSString).lastPathComponent)
            head = (head as NSString).deletingLastPathComponent
        }
    }

    static func isInside(_ path: String, _ folder: String) -> Bool {
        folder == "/" || path == folder || path.hasPrefix(folder + "/")
    }

    // MARK: - Devices

    /// `/dev/videoN`, or a `/dev/v4l/by-id|by-path/` link to one: resolved
    /// when it exists; one not there (yet) only by its own name.
    static func isCaptureDevice(_ path: String) -> Bool {
        if let real = realpath(path, nil) {
            defer { free(real) }
            return isVideoNode(String(cString: real))
        }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard !parts.contains(".."), !parts.contains(".") else { return false }
        return isVideoNode(path) || ((path.hasPrefix("/dev/v4l/by-id/") || path.hasPrefix("/dev/v4l/by-path/"))
                                     && parts.count == 5 && !parts[4].isEmpty)
    }

    static func isVideoNode(_ path: String) -> Bool {
        guard path.hasPrefix("/dev/video") else { return false }
        let number = path.dropFirst("/dev/video".count)
        return !number.isEmpty && number.allSatisfy { $0.isASCII && $0.isNumber }
    }

    // MARK: - This server itself

    static func selfRefusal(_ spec: SourceSpec, host: String, port: Int, localNames: Set<String>) -> Refusal? {
        guard case .stream(let url) = spec, isSelf(url, serverHost: host, port: port, localNames: localNames) else { return nil }
        return Refusal(error: "source is this server",
                       detail: "'\(SourceSpec.logForm(url))' is this server's own address and port (\(port)): a camera "
                       + "reading the server's own stream feeds on itself; give the camera's or relay's own URL")
    }

    /// Whether stream `url` points at this server: its host a loopback,
    /// "any", this machine's name or address, or the server's host, and its
    /// port (the scheme's default when it names none) `port`. Port 0 (not
    /// bound yet) matches nothing.
    public static func isSelf(_ url: String, serverHost: String, port: Int, localNames: Set<String>) -> Bool {
        guard port > 0, let (host, urlPort) = hostAndPort(url), urlPort == port else { return false }
        let name = canonicalHost(host)
        if name == "localhost" || name.hasSuffix(".localhost") { return true }
        if isLoopbackOrAny(name) { return true }
        let server = canonicalHost(serverHost)
        return name == server || localNames.contains(name)
    }

    /// The URL's host (brackets off) and port (the scheme's default when none is given).
    static func hostAndPort(_ url: String) -> (String, Int)? {
        guard let scheme = url.range(of: "://") else { return nil }
        let rest = url[scheme.upperBound...]
        let end = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        var authority = rest[..<end]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        if let percent = host.firstIndex(of: "%") { host = host[..<percent] }  // an IPv6 zone
        let defaults = ["http": 80, "https": 443, "rtsp": 554, "rtsps": 322, "rtmp": 1935]
        let port: Int?
        if let portText, !portText.isEmpty { port = Int(portText) } else { port = defaults[url[..<scheme.lowerBound].lowercased()] }
        guard let port else { return nil }
        return (String(host), port)
    }

    /// Lower case without a final dot; an address in its usual form (`127.1` is `127.0.0.1`).
    static func canonicalHost(_ host: String) -> String {
        var name = host.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        return numericAddress(name) ?? name
    }

    /// An IPv4 (in any form `inet_aton` takes, as resolvers do) or IPv6 address in `inet_ntop`'s form; nil for a name.
    static func numericAddress(_ text: String) -> String? {
        var v4 = in_addr()
        if !text.contains(":"), text.first?.isNumber == true, inet_aton(text, &v4) != 0 {
            return ntop(AF_INET, &v4, Int(INET_ADDRSTRLEN))
        }
        var v6 = in6_addr()
        if text.contains(":"), inet_pton(AF_INET6, text, &v6) == 1 {
            return ntop(AF_INET6, &v6, Int(INET6_ADDRSTRLEN))
        }
        return nil
    }

    private static func ntop(_ family: Int32, _ address: UnsafeRawPointer, _ size: Int) -> String? {
        var buffer = [CChar](repeating: 0, count: size)
        guard inet_ntop(family, address, &buffer, socklen_t(size)) != nil else { return nil }
        return String(cString: buffer)
    }

    /// 127.0.0.0/8, 0.0.0.0/8, ::1, :: and the IPv4-mapped forms of the first two.
    static func isLoopbackOrAny(_ canonical: String) -> Bool {
        var text = canonical
        if text.hasPrefix("::ffff:") && text.contains(".") { text = String(text.dropFirst("::ffff:".count)) }
        if text == "::1" || text == "::" { return true }
        var v4 = in_addr()
        guard !text.contains(":"), inet_pton(AF_INET, text, &v4) == 1 else { return false }
        let first = UInt32(bigEndian: v4.s_addr) >> 24
        return first == 127 || first == 0
    }

    /// This machine's host name (whole and up to its first dot) and every
    /// address of its interfaces, as `canonicalHost` writes them.
    public static func localNames() -> Set<String> {
        var names = Set<String>()
        var buffer = [CChar](repeating: 0, count: 256)
        if gethostname(&buffer, buffer.count - 1) == 0 {
            let name = canonicalHost(String(cString: buffer))
            if !name.isEmpty {
                names.insert(name)
                if let short = name.split(separator: ".").first { names.insert(String(short)) }
            }
        }
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return names }
        defer { freeifaddrs(list) }
        var next: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = next {
            defer { next = entry.pointee.ifa_next }
            guard let address = entry.pointee.ifa_addr else { continue }
            switch Int32(address.pointee.sa_family) {
            case AF_INET:
                address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                    var a = v4.pointee.sin_addr
                    if let text = ntop(AF_INET, &a, Int(INET_ADDRSTRLEN)) { names.insert(text) }
                }
            case AF_INET6:
                address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                    var a = v6.pointee.sin6_addr
                    if let text = ntop(AF_INET6, &a, Int(INET6_ADDRSTRLEN)) { names.insert(text) }
                }
            default:
                break
            }
        }
        return names
    }
}

extension ServeSettings {
    /// Every source spec the config and flags name: the source, the offered
    /// ones, and each camera's of `cameras:` (its source and offers).
    public var configuredSources: [String] {
        var specs = [own.source] + own.offeredSources
        for camera in cameras {
            // What the camera itself gives (its `source.spec` and `source.offer`), not the top level's again.
            var given = CameraSettings()
            given.offeredSources = []
            for setting in camera.overrides where setting.key.hasPrefix("source.") { setting.apply(to: &given) }
            if camera.overrides.contains(where: { $0.key == "source.spec" }) { specs.append(given.source) }
            specs += given.offeredSources
        }
        return specs
    }

    /// The media folders a file source added or switched to at runtime must
    /// be under: `media:` / `--media-dir`, and the folders of every file the
    /// config and flags name.
    public var mediaFoldersInEffect: [String] {
        var folders = server.mediaFolders
        for spec in configuredSources {
            guard case .file(let path, _, _)? = try? SourceSpec.parse(spec) else { continue }
            let folder = (path as NSString).deletingLastPathComponent
            let named = folder.isEmpty ? "." : folder
            if !folders.contains(named) { folders.append(named) }
        }
        return folders
    }

    /// Throws when a source the config and flags name is this server itself
    /// (checked once the port is known: not for port 0).
    func checkNotSelf() throws {
        guard server.port > 0 else { return }
        let names = SourcePolicy.localNames()
        for spec in [own.source] + own.offeredSources {
            guard let parsed = try? SourceSpec.parse(spec),
                  let refusal = SourcePolicy.selfRefusal(parsed, host: server.host, port: server.port, localNames: names) else { continue }
            throw ConfigError.invalid("source \(refusal.detail)")
        }
    }
}
