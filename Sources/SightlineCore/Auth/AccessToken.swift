import Foundation

/// The bearer token that mutating calls must carry.
///
/// Where it comes from, first found wins: the environment (SIGHTLINE_TOKEN),
/// the config file, `<data-dir>/token`, or a new random one written there
/// with mode 0600 (and logged once by the caller). Immutable once made.
public struct AccessToken: Sendable {
    public enum Origin: String, Sendable { case environment, config, file, generated }

    public let value: String
    public let origin: Origin

    public static func resolve(environment: [String: String], configured: String?, dataDir: String) throws -> AccessToken {
        if let value = environment["SIGHTLINE_TOKEN"], !value.isEmpty { return AccessToken(value: value, origin: .environment) }
        if let configured, !configured.isEmpty { return AccessToken(value: configured, origin: .config) }
        let path = (dataDir as NSString).appendingPathComponent("token")
        if let data = FileManager.default.contents(atPath: path) {
            let value = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            if !value.isEmpty { return AccessToken(value: value, origin: .file) }
        }
        var generator = SystemRandomNumberGenerator()
        let value = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        try AtomicFile.write(Data((value + "\n").utf8), to: path, permissions: 0o600)
        return AccessToken(value: value, origin: .generated)
    }

    /// Compares in time that does not depend on where the strings differ.
    public func matches(_ candidate: String?) -> Bool {
        let expected = Array(value.utf8)
        let given = Array((candidate ?? "").utf8)
        var difference = UInt8(truncatingIfNeeded: expected.count ^ given.count)
        for i in 0..<expected.count {
            difference |= expected[i] ^ (i < given.count ? given[i] : 0)
        }
        return difference == 0 && candidate != nil
    }
}

/// Writes a file whole or not at all: a temporary file beside it, then rename.
public enum AtomicFile {
    public static func write(_ data: Data, to path: String, permissions: Int = 0o644) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        let temporary = path + ".tmp-\(getpid())"
        guard FileManager.default.createFile(atPath: temporary, contents: data,
                                             attributes: [.posixPermissions: permissions]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: temporary])
        }
        guard rename(temporary, path) == 0 else {
            let why = String(cString: strerror(errno))
            unlink(temporary)
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path, NSLocalizedDescriptionKey: why])
        }
    }
}
