import Foundation
import Testing
@testable import SightlineVision
import SightlineTesting

@Suite("Shape model cache: the compact form read back fits as the one compacted from dlib's file")
struct ShapeModelCacheTests {
    static let modelPath = FaceShapeModel.defaultPath

    func temporaryFolder() throws -> String {
        let folder = NSTemporaryDirectory() + "shape-cache-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return folder
    }

    /// The upright crops of the faces (40 px and more) in three photos, found once per test.
    func crops() throws -> [UprightFaceCrop] {
        let detector = try YuNetDetectorTests.detector()
        var all: [UprightFaceCrop] = []
        for file in ["grace_hopper.jpg"] + FaceTestData.labelledPhotos.prefix(2) {
            let image = try FaceTestData.image(file)
            let gray = try ImageOps.gray(image)
            for face in try detector.detect(in: image, gray: gray, limit: 5) where face.box.w >= 40 {
                let landmarks = try #require(face.landmarks)
                all.append(try #require(try UprightFaceCrop(gray: gray, landmarks: landmarks)))
            }
        }
        return all
    }

    func points(_ model: FaceShapeModel, on crops: [UprightFaceCrop]) throws -> [[Double]] {
        try crops.map { try model.fit($0).points.flatMap { [$0.x, $0.y] } }
    }

    @Test("the first load writes the cache, the second reads it, and both place the same points", .enabled(if: FaceShapeTests.hasModel, FaceShapeTests.noModel))
    func cachedModelFitsTheSame() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let cache = ShapeModelCache(directory: folder + "/made-on-first-use")
        let file = try #require(cache.file(for: Self.modelPath))
        #expect(cache.read(for: Self.modelPath) == nil)
        let compacted = try FaceShapeModel(path: Self.modelPath, cache: cache)
        #expect(FileManager.default.fileExists(atPath: file))
        let size = try #require(try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int)
        #expect(size > 1_000_000 && size < 30_000_000, "the compact form is about 10 MB, got \(size)")
        let cached = try FaceShapeModel(path: Self.modelPath, cache: cache)
        let faces = try crops()
        let first = try points(compacted, on: faces), second = try points(cached, on: faces)
        #expect(first.count >= 3)
        #expect(first == second)
        // Nothing but the cache file itself is left in the folder (no partial files).
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder + "/made-on-first-use") == [(file as NSString).lastPathComponent])
    }

    @Test("a cache file cut short or overwritten is not used: dlib's file is read again and the cache replaced", .enabled(if: FaceShapeTests.hasModel, FaceShapeTests.noModel))
    func brokenCacheIsReplaced() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let cache = ShapeModelCache(directory: folder)
        let faces = try crops()
        let good = try points(FaceShapeModel(path: Self.modelPath, cache: cache), on: faces)
        let file = try #require(cache.file(for: Self.modelPath))
        let whole = try Data(contentsOf: URL(fileURLWithPath: file))
        for broken in [whole.prefix(whole.count / 2), Data(repeating: 0x41, count: 4096), Data()] {
            try broken.write(to: URL(fileURLWithPath: file))
            #expect(cache.read(for: Self.modelPath) == nil)
            #expect(try points(FaceShapeModel(path: Self.modelPath, cache: cache), on: faces) == good)
            #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == whole)
        }
    }

    @Test("the folder: SIGHTLINE_CACHE_DIR, systemd's CACHE_DIRECTORY, XDG_CACHE_HOME, then ~/.cache")
    func folderChoice() {
        #expect(ShapeModelCache.directory(environment: ["SIGHTLINE_CACHE_DIR": "/a", "HOME": "/h"]) == "/a")
        #expect(ShapeModelCache.directory(environment: ["CACHE_DIRECTORY": "/var/cache/sightline:/x", "HOME": "/h"]) == "/var/cache/sightline")
        #expect(ShapeModelCache.directory(environment: ["XDG_CACHE_HOME": "/x", "HOME": "/h"]) == "/x/sightline")
        #expect(ShapeModelCache.directory(environment: ["HOME": "/h"]) == "/h/.cache/sightline")
        #expect(ShapeModelCache.directory(environment: [:]) == nil)
        #expect(ShapeModelCache(directory: nil).file(for: FaceShapeModel.defaultPath) == nil)
    }
}
