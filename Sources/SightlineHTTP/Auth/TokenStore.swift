import Foundation
import Synchronization
import SightlineSupport

/// The named tokens that may use the server, each with a role, kept hashed
/// (SHA-256) in `<data-dir>/tokens.json` (mode 0600). Tokens are 256 random
/// bits, so a fast hash is enough; the plain token is shown once, when it
/// is made, and never stored.
///
/// Besides the file: `SIGHTLINE_TOKEN` and the config's `token:` are admin
/// tokens (named `env` and `config`). When no admin exists at all, the first
/// start makes one, named `admin`, and writes it to `<data-dir>/token`
/// (mode 0600, the place earlier versions and the design documents name) so
/// its owner can read it; a `<data-dir>/token` from an earlier version is
/// taken into the store the same way. Revoking `admin` removes that file.
///
/// The file is read again whenever it changes on disk, so `sightline token
/// add/revoke` take effect on the server's next request. The parsed entries
/// are in a `Mutex`.
public final class TokenStore: Sendable {
    public struct Summary: Codable, Sendable, Equatable {
        public var name: String
        public var role: Role
        public var createdAt: Double
        /// "store", "env" or "config".
        public var source: String
    }

    struct Entry: Codable, Sendable, Equatable {
        var name: String
        var role: Role
        var sha256: String
        var createdAt: Double
    }

    private struct FileData: Codable { var tokens: [Entry] }

    private struct State {
        var entries: [Entry] = []
        /// What the file looked like when read (inode, size, mtime), to notice changes.
        var stamp: [Int] = []
        /// Bumped when a token disappears, so open streams can check theirs again.
        var revocations: UInt64 = 0
    }

    public static let generatedName = "admin"
    public let path: String
    private let tokenFilePath: String
    private let fixed: [Entry]
    private let state = Locked(State())

    /// Opens the store in `dataDir`. `environment` and `configured` add the
    /// env and config admin tokens. With `makeAdmin` (the server at start),
    /// an admin token is made when there is none; it is returned so the caller can show it once.
    public static func open(dataDir: String, environment: [String: String] = [:], configured: String? = nil,
                            makeAdmin: Bool = false) throws -> (store: TokenStore, generated: String?) {
        var fixed: [Entry] = []
        if let value = environment["SIGHTLINE_TOKEN"], !value.isEmpty {
            fixed.append(Entry(name: "env", role: .admin, sha256: digest(value), createdAt: 0))
        }
        if let configured, !configured.isEmpty {
            fixed.append(Entry(name: "config", role: .admin, sha256: digest(configured), createdAt: 0))
        }
        let store = TokenStore(dataDir: dataDir, fixed: fixed)
        try store.reload(force: true)
        var generated: String?
        let tokenFile = store.tokenFilePath
        if let data = FileManager.default.contents(atPath: tokenFile) {
            let value = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            if !value.isEmpty, store.credential(for: value) == nil {
                try store.insert(Entry(name: generatedName, role: .admin, sha256: digest(value), createdAt: now()))
            }
        } else if makeAdmin && !store.hasAdmin {
            let value = makeToken()
            do {
                try AtomicFile.write(Data((value + "\n").utf8), to: tokenFile, permissions: 0o600)
            } catch let error as StorageError {
                throw TokenError.cannotWrite("the admin token", directory: dataDir, error,
                                             advice: "or give the admin token in SIGHTLINE_TOKEN")
            }
            try store.insert(Entry(name: generatedName, role: .admin, sha256: digest(value), createdAt: now()))
            generated = value
        }
        return (store, generated)
    }

    private init(dataDir: String, fixed: [Entry]) {
        path = (dataDir as NSString).appendingPathComponent("tokens.json")
        tokenFilePath = (dataDir as NSString).appendingPathComponent("token")
        self.fixed = fixed
    }

    /// A store with only these tokens and no file (tests, tools).
    public init(fixed tokens: [(name: String, role: Role, token: String)]) {
        path = ""
        tokenFilePath = ""
        fixed = tokens.map { Entry(name: $0.name, role: $0.role, sha256: Self.digest($0.token), createdAt: 0) }
    }

    /// The credential a token proves, or nil. Compares digests in constant time.
    public func credential(for token: String?) -> Credential? {
        guard let token, !token.isEmpty, token.utf8.count <= 512 else { return nil }
        try? reload()
        let candidate = Self.digest(token)
        let entries = fixed + state.withLock { $0.entries }
        var found: Entry?
        for entry in entries where Self.equalInConstantTime(entry.sha256, candidate) { found = found ?? entry }
        return found.map { Credential(name: $0.name, role: $0.role) }
    }

    /// Whether `credential` is still valid (its token was not revoked meanwhile).
    public func isValid(_ credential: Credential) -> Bool {
        try? reload()
        return (fixed + state.withLock { $0.entries }).contains { $0.name == credential.name && $0.role == credential.role }
    }

    /// Changes when a token is revoked (from this process or, through the file, another).
    public var revocations: UInt64 {
        try? reload()
        return state.withLock { $0.revocations }
    }

    /// The revocation count and every valid credential, as of one read of
    /// the file (the server's `RevocationWatch` asks this off the service thread).
    func validCredentials() -> (revocations: UInt64, valid: Set<Credential>) {
        try? reload()
        return state.withLock { state in
            (state.revocations, Set((fixed + state.entries).map { Credential(name: $0.name, role: $0.role) }))
        }
    }

    public func list() -> [Summary] {
        try? reload()
        return fixed.map { Summary(name: $0.name, role: $0.role, createdAt: $0.createdAt, source: $0.name) }
            + state.withLock { $0.entries }.map { Summary(name: $0.name, role: $0.role, createdAt: $0.createdAt, source: "store") }
    }

    /// Makes a token named `name` with `role`; returns it (shown once, never stored).
    public func add(name: String, role: Role) throws -> String {
        if let problem = Self.nameProblem(name) { throw TokenError.badName(problem) }
        try reload()
        guard !(fixed + state.withLock { $0.entries }).contains(where: { $0.name == name }) else {
            throw TokenError.exists(name)
        }
        guard !path.isEmpty else { throw TokenError.unreadable("(no file)", "this store keeps no tokens of its own") }
        let value = Self.makeToken()
        try insert(Entry(name: name, role: role, sha256: Self.digest(value), createdAt: Self.now()))
        return value
    }

    /// Removes the token named `name`; false when there is none in the store.
    @discardableResult
    public func revoke(name: String) throws -> Bool {
        if fixed.contains(where: { $0.name == name }) { throw TokenError.notInStore(name) }
        try reload()
        var entries = state.withLock { $0.entries }
        guard entries.contains(where: { $0.name == name }) else { return false }
        entries.removeAll { $0.name == name }
        try write(entries)
        if name == Self.generatedName { unlink(tokenFilePath) }
        try reload(force: true)
        return true
    }

    var hasAdmin: Bool { (fixed + state.withLock { $0.entries }).contains { $0.role == .admin } }

    // MARK: - File

    private func insert(_ entry: Entry) throws {
        var entries = state.withLock { $0.entries }
        entries.removeAll { $0.name == entry.name }
        entries.append(entry)
        try write(entries)
        try reload(force: true)
    }

    private func write(_ entries: [Entry]) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(FileData(tokens: entries))
        do {
            try AtomicFile.write(data, to: path, permissions: 0o600)
        } catch let error as StorageError {
            throw TokenError.cannotWrite("the token list", directory: (path as NSString).deletingLastPathComponent, error,
                                         advice: nil)
        }
    }

    /// Reads the file again when it changed on disk (or when forced).
    private func reload(force: Bool = false) throws {
        guard !path.isEmpty else { return }
        var info = stat()
        let stamp: [Int] = stat(path, &info) == 0
            ? [Int(info.st_ino), Int(info.st_size), Int(info.st_mtim.tv_sec), Int(info.st_mtim.tv_nsec)] : []
        if !force, state.withLock({ $0.stamp == stamp }) { return }
        var entries: [Entry] = []
        if !stamp.isEmpty {
            guard let data = FileManager.default.contents(atPath: path) else { throw TokenError.unreadable(path, "cannot read") }
            do {
                entries = try JSONDecoder().decode(FileData.self, from: data).tokens
            } catch {
                throw TokenError.unreadable(path, "\(error)")
            }
        }
        state.withLock { state in
            let names = Set(entries.map { "\($0.name)/\($0.role)/\($0.sha256)" })
            if state.entries.contains(where: { !names.contains("\($0.name)/\($0.role)/\($0.sha256)") }) { state.revocations += 1 }
            state.entries = entries
            state.stamp = stamp
        }
    }

    // MARK: - Helpers

    static func digest(_ token: String) -> String {
        SHA256.hash(token.utf8).map { String(format: "%02x", $0) }.joined()
    }

    static func makeToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    static func equalInConstantTime(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var difference: UInt8 = 0
        for i in 0..<x.count { difference |= x[i] ^ y[i] }
        return difference == 0
    }

    static func nameProblem(_ name: String) -> String? {
        guard (1...64).contains(name.count) else { return "a token name has 1 to 64 characters" }
        guard name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }) else {
            return "a token name uses letters, digits, '.', '_' and '-' only"
        }
        guard !["env", "config"].contains(name) else { return "'\(name)' names the \(name) token; choose another name" }
        return nil
    }

    private static func now() -> Double { Date().timeIntervalSince1970.rounded(toPlaces: 3) }
}

public enum TokenError: Error, CustomStringConvertible, Equatable {
    case badName(String)
    case exists(String)
    case notInStore(String)
    case unreadable(String, String)
    /// What could not be written, in which data directory, why, and what to do.
    case cannotWrite(String, directory: String, StorageError, advice: String?)

    public var description: String {
        switch self {
        case .badName(let why): return why
        case .exists(let name): return "a token named '\(name)' exists; revoke it first or choose another name"
        case .notInStore(let name):
            return "'\(name)' comes from \(name == "env" ? "SIGHTLINE_TOKEN" : "the config file"); remove it there"
        case .unreadable(let path, let why): return "\(path): \(why)"
        case .cannotWrite(let what, let directory, let error, let advice):
            return "cannot write \(what) in the data directory \(directory): \(error.reason); \(error.reason.hint)"
                + (advice.map { ", \($0)" } ?? "")
        }
    }
}
