import Foundation
import Testing
@testable import SightlineSupport
@testable import SightlineVision
@testable import SightlineCore
import SightlineTesting

@Suite struct TemplateStoreTests {
    static func template(_ name: String, seed: Int) throws -> Template {
        let image = ImageBuffer(width: 24, height: 16)
        for i in 0..<(image.stride * image.height) { image.bytes[i] = UInt8((i * (seed + 3) + seed * 31) % 251) }
        return try Template(name: name, image: image)
    }

    static func files(_ store: TemplateStore) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: store.directory)) ?? []).sorted()
    }

    @Test func namesThatDifferBySpaceAndUnderscoreKeepTheirOwnFiles() throws {
        let dir = try TestPaths.temporaryDirectory()
        let store = TemplateStore(dataDirectory: dir)
        let spaced = try Self.template("my logo", seed: 1)
        let underscored = try Self.template("my_logo", seed: 2)
        try store.save([spaced], writingImageOf: spaced)
        try store.save([spaced, underscored], writingImageOf: underscored)
        #expect(Self.files(store) == ["index.json", "my%20logo.png", "my_logo.png"])
        let loaded = try TemplateStore(dataDirectory: dir).load()
        #expect(loaded.templates.map(\.name).sorted() == ["my logo", "my_logo"])
        let a = try #require(loaded.templates.first { $0.name == "my logo" })
        let b = try #require(loaded.templates.first { $0.name == "my_logo" })
        #expect(a.image.bytes[5] == spaced.image.bytes[5] && b.image.bytes[5] == underscored.image.bytes[5])
        #expect(a.image.bytes[5] != b.image.bytes[5])
        #expect(loaded.removed.isEmpty && loaded.problems.isEmpty)
    }

    @Test func leftoversOfAnInterruptedWriteAreRemovedAtStart() throws {
        let dir = try TestPaths.temporaryDirectory()
        let store = TemplateStore(dataDirectory: dir)
        let kept = try Self.template("kept", seed: 4)
        try store.save([kept], writingImageOf: kept)
        // What kill -9 during an upload can leave: a half-written image, a half-written index, an image no entry names.
        for name in ["orphan.png.tmp-4242", "index.json.tmp-4242", "orphan.png"] {
            FileManager.default.createFile(atPath: store.directory + "/" + name, contents: Data([1, 2, 3]))
        }
        let loaded = try TemplateStore(dataDirectory: dir).load()
        #expect(loaded.templates.map(\.name) == ["kept"])
        #expect(loaded.removed == ["index.json.tmp-4242", "orphan.png", "orphan.png.tmp-4242"])
        #expect(Self.files(store) == ["index.json", "kept.png"])
    }

    @Test func anEarlierVersionsFileNamesAreMovedToTheirOwn() throws {
        let dir = try TestPaths.temporaryDirectory()
        let store = TemplateStore(dataDirectory: dir)
        let old = try Self.template("shop sign", seed: 5)
        try FileManager.default.createDirectory(atPath: store.directory, withIntermediateDirectories: true)
        try AtomicFile.write(try ImageIO.encode(old.image, as: ".png"), to: store.directory + "/shop_sign.png")
        let index = #"[{"name": "shop sign", "threshold": 0.75, "createdAt": 1700000000, "file": "shop_sign.png"}]"#
        try AtomicFile.write(Data(index.utf8), to: store.directory + "/index.json")
        let loaded = try store.load()
        #expect(loaded.templates.map(\.name) == ["shop sign"] && loaded.templates.first?.threshold == 0.75)
        #expect(Self.files(store) == ["index.json", "shop%20sign.png"])
        #expect(loaded.removed == ["shop_sign.png"])
    }
}
