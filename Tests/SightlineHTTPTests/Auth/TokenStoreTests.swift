import Foundation
import Testing
@testable import SightlineHTTP
import SightlineTesting

@Suite struct TokenStoreTests {
    @Test func namedTokensAreHashedWithTheirRoles() throws {
        let dir = try TestPaths.temporaryDirectory()
        let store = try TokenStore.open(dataDir: dir).store
        let viewer = try store.add(name: "kitchen-tablet", role: .viewer)
        let admin = try store.add(name: "ops", role: .admin)
        #expect(viewer.count == 64 && viewer != admin)
        #expect(store.credential(for: viewer) == Credential(name: "kitchen-tablet", role: .viewer))
        #expect(store.credential(for: admin) == Credential(name: "ops", role: .admin))
        #expect(store.credential(for: viewer + "x") == nil)
        #expect(store.credential(for: "") == nil && store.credential(for: nil) == nil)
        let file = try String(contentsOfFile: store.path, encoding: .utf8)
        #expect(!file.contains(viewer) && !file.contains(admin))
        #expect(file.contains(TokenStore.digest(viewer)))
        let mode = try FileManager.default.attributesOfItem(atPath: store.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(store.list().map(\.name) == ["kitchen-tablet", "ops"])
        #expect(throws: TokenError.exists("ops")) { try store.add(name: "ops", role: .viewer) }
        #expect(throws: TokenError.self) { try store.add(name: "no spaces", role: .viewer) }
        #expect(throws: TokenError.self) { try store.add(name: "env", role: .viewer) }
    }

    @Test func digestsAreSHA256InHex() {
        // FIPS 180-2's vectors: token files written before (by swift-crypto) still match.
        #expect(TokenStore.digest("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(TokenStore.digest("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test func revocationReachesAnotherProcessThroughTheFile() throws {
        let dir = try TestPaths.temporaryDirectory()
        let server = try TokenStore.open(dataDir: dir).store
        let cli = try TokenStore.open(dataDir: dir).store
        let token = try cli.add(name: "cam", role: .viewer)
        #expect(server.credential(for: token)?.name == "cam")   // the server reads the changed file
        let before = server.revocations
        #expect(try cli.revoke(name: "cam"))
        #expect(server.credential(for: token) == nil)
        #expect(!server.isValid(Credential(name: "cam", role: .viewer)))
        #expect(server.revocations > before)
        #expect(try !cli.revoke(name: "cam"))
    }

    @Test func environmentAndConfigTokensAreAdmins() throws {
        let dir = try TestPaths.temporaryDirectory()
        let (store, generated) = try TokenStore.open(dataDir: dir, environment: ["SIGHTLINE_TOKEN": "from-env"],
                                                     configured: "from-config", makeAdmin: true)
        #expect(generated == nil)   // an admin exists already: nothing is made
        #expect(store.credential(for: "from-env") == Credential(name: "env", role: .admin))
        #expect(store.credential(for: "from-config") == Credential(name: "config", role: .admin))
        #expect(throws: TokenError.notInStore("env")) { try store.revoke(name: "env") }
        #expect(!FileManager.default.fileExists(atPath: dir + "/token"))
    }

    @Test func firstStartMakesAnAdminAndAnOldTokenFileIsTakenIn() throws {
        let dir = try TestPaths.temporaryDirectory()
        let (store, generated) = try TokenStore.open(dataDir: dir, makeAdmin: true)
        let token = try #require(generated)
        #expect(store.credential(for: token) == Credential(name: "admin", role: .admin))
        let file = try String(contentsOfFile: dir + "/token", encoding: .utf8)
        #expect(file.trimmingCharacters(in: .whitespacesAndNewlines) == token)
        // A second start makes nothing new and still knows it.
        let (again, none) = try TokenStore.open(dataDir: dir, makeAdmin: true)
        #expect(none == nil && again.credential(for: token)?.role == .admin)
        // Revoking it removes the file too; the CLI never makes one.
        #expect(try again.revoke(name: "admin"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/token"))
        #expect(try TokenStore.open(dataDir: dir).generated == nil)

        // A data directory from an earlier version: only `token`, in plain text.
        let old = try TestPaths.temporaryDirectory()
        try "0123456789abcdef\n".write(toFile: old + "/token", atomically: true, encoding: .utf8)
        let migrated = try TokenStore.open(dataDir: old, makeAdmin: true)
        #expect(migrated.generated == nil)
        #expect(migrated.store.credential(for: "0123456789abcdef") == Credential(name: "admin", role: .admin))
    }

    @Test func aBrokenFileIsAClearError() throws {
        let dir = try TestPaths.temporaryDirectory()
        try "{not json".write(toFile: dir + "/tokens.json", atomically: true, encoding: .utf8)
        #expect(throws: TokenError.self) { try TokenStore.open(dataDir: dir) }
    }

    @Test func rolesOrder() {
        #expect(Role.admin.allows(.viewer) && Role.admin.allows(.admin))
        #expect(Role.viewer.allows(.viewer) && !Role.viewer.allows(.admin))
    }
}
