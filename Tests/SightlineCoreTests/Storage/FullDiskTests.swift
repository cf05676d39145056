import Foundation
import Testing
@testable import SightlineSupport
@testable import SightlineVision
@testable import SightlinePipeline
@testable import SightlineHTTP
@testable import SightlineEvents
@testable import SightlineCore
import SightlineTesting
import SightlineEventsTesting
import SightlineHTTPTesting

/// The same on a real full disk: a small tmpfs, filled (root only).
@Suite(.serialized, .enabled(if: SmallTmpfs.available, SmallTmpfs.skipMessage))
struct FullDiskTests {
    static func isNoSpace(_ error: Error) -> Bool { (error as? StorageError)?.reason == .noSpace }

    @Test func aFullDiskKeepsTheOldFileAndWorksOnceThereIsSpace() throws {
        let disk = try SmallTmpfs()
        let path = disk.path + "/index.json"
        try AtomicFile.write(Data("old".utf8), to: path)
        disk.fill()
        #expect(performing: { try AtomicFile.write(Data(repeating: 1, count: 10_000), to: path) },
                throws: Self.isNoSpace)
        #expect(AtomicFile.probe(directory: disk.path)?.reason == .noSpace)
        #expect(FileManager.default.contents(atPath: path) == Data("old".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: disk.path).sorted() == ["filler", "index.json"])
        disk.free()
        try AtomicFile.write(Data("new".utf8), to: path)
        #expect(FileManager.default.contents(atPath: path) == Data("new".utf8))
    }

    @Test func anUploadOnAFullDiskIsRefusedInWordsAndCounted() throws {
        let disk = try SmallTmpfs(size: "1m")
        let stats = PipelineStats()
        let library = TemplateLibrary()
        let api = TemplateAPI(library: library, store: TemplateStore(dataDirectory: disk.path), uploadedNames: [],
                              defaultThreshold: 0.7, frameSize: { (640, 480) },
                              storageFailures: StorageFailureReporter(stats: stats))
        let auth = AuthGuard.testing()
        let router = Router(routes: api.routes, authorize: { auth.refusal(for: $0, needs: $1) })
        let upload = HTTPRequest(method: .post, path: "/api/templates", query: ["name": "logo"],
                                 headers: TemplateAPITests.admin, body: try TemplateAPITests.png())
        disk.fill()
        let refused = router.respond(to: upload)
        #expect(refused.status == 507)
        let body = try TemplateAPITests.json(refused)
        #expect(body["error"] as? String == "cannot save the template")
        let detail = try #require(body["detail"] as? String)
        #expect(detail.hasPrefix("no space left on the device (the disk is full); "))
        #expect(!detail.contains(disk.path) && !detail.contains("Cocoa"))
        #expect(library.all.isEmpty)
        #expect(stats.snapshot().storageWriteFailures[.templates] == 1)
        disk.free()
        #expect(router.respond(to: upload).status == 201)
        #expect(library.all.map(\.name) == ["logo"])
    }

    @Test func theAdminTokenThatCannotBeWrittenSaysSoAndWhere() throws {
        let disk = try SmallTmpfs()
        disk.fill()
        do {
            _ = try TokenStore.open(dataDir: disk.path, makeAdmin: true)
            Issue.record("opened on a full disk")
        } catch let error as TokenError {
            let text = "\(error)"
            #expect(text.hasPrefix("cannot write the admin token in the data directory \(disk.path): no space left on the device (the disk is full)"))
            #expect(text.hasSuffix("or give the admin token in SIGHTLINE_TOKEN"))
            #expect(!text.contains("Cocoa") && !text.contains(".tmp-"))
        }
        disk.free()
        #expect(try TokenStore.open(dataDir: disk.path, makeAdmin: true).generated != nil)
    }

    @Test func eventsThatCannotBeSavedAreCountedAndSaidOnce() throws {
        let disk = try SmallTmpfs()
        let store = EventStore(directory: disk.path + "/events")
        try store.load()
        disk.fill()
        var record = StoredEvents.record(1)
        #expect(performing: { try store.save(record, snapshot: Data(repeating: 7, count: 5000)) }, throws: Self.isNoSpace)
        #expect(store.allIDs.isEmpty)
        disk.free()
        record.lastTime += 1
        #expect(try store.save(record, snapshot: Data(repeating: 7, count: 5000)))
        #expect(store.allIDs == [record.id])
    }

    @Test func aModelOpenCVCannotWriteWholeIsNotTakenAndTheRecognizerGoesBack() throws {
        let disk = try SmallTmpfs(size: "2m")
        let store = PeopleStore(dataDirectory: disk.path)
        let recognizer = try FaceRecognizer(store: store)
        try recognizer.enroll(Self.crops(seed: 1, count: 2), as: "Ada")
        let savedModel = try #require(FileManager.default.contents(atPath: store.modelPath))
        disk.fill()
        #expect(performing: { try recognizer.enroll(Self.crops(seed: 2, count: 6), as: "Bob") }, throws: Self.isNoSpace)
        // Nothing cut short replaced the model, and what was not saved is not used.
        #expect(FileManager.default.contents(atPath: store.modelPath) == savedModel)
        #expect(recognizer.people == [PersonSummary(name: "Ada", samples: 2)])
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.directory).sorted()
                == ["lbph-model.yml.gz", "people.json"])
        disk.free()
        try recognizer.enroll(Self.crops(seed: 2, count: 6), as: "Bob")
        let reloaded = try FaceRecognizer(store: store)
        #expect(reloaded.people.map(\.name) == ["Ada", "Bob"])
    }

    @Test func aFaceServiceAnswersAFullDiskInWordsAndCountsIt() throws {
        let disk = try SmallTmpfs(size: "2m")
        let stats = PipelineStats()
        let service = FaceService(recognizer: try FaceRecognizer(store: PeopleStore(dataDirectory: disk.path)),
                                  storageFailures: StorageFailureReporter(stats: stats))
        let ada = Self.crops(seed: 3, count: 1)[0]
        disk.fill()
        let landmarks = FaceLandmarks(rightEye: .init(x: 30, y: 40), leftEye: .init(x: 70, y: 40), nose: .init(x: 50, y: 60),
                                      mouthRight: .init(x: 35, y: 80), mouthLeft: .init(x: 65, y: 80))
        let picture = ImageBuffer(width: ada.width, height: ada.height)
        guard case .failure(let failure) = service.name(picture: picture, landmarks: landmarks, as: "Ada") else {
            Issue.record("learned on a full disk")
            return
        }
        #expect(failure.status == 507 && failure.error == "cannot save what was learned")
        #expect(failure.detail.hasPrefix("no space left on the device") && !failure.detail.contains(disk.path))
        #expect(stats.snapshot().storageWriteFailures[.faces] == 1)
        #expect(service.people().isEmpty)
    }

    /// Gray 100x100 crops of noise: LBPH learns anything.
    static func crops(seed: UInt64, count: Int) -> [ImageBuffer] {
        var random = SeededRandom(seed: seed)
        return (0..<count).map { _ in
            let crop = ImageBuffer(width: 100, height: 100, channels: 1)
            for i in 0..<crop.byteCount { crop.bytes[i] = UInt8(truncatingIfNeeded: random.next()) }
            return crop
        }
    }
}
