import Foundation
import Testing
@testable import SightlineSupport
@testable import SightlineVision
@testable import SightlinePipeline
@testable import SightlineHTTP
@testable import SightlineCore
import SightlineTesting

/// Write errors become words without paths, in one place (`StorageError`),
/// and every caller says them that way.
@Suite struct StorageErrorTests {
    static let secretPath = "/srv/secret-place/data/templates/x.png.tmp-123"

    @Test(arguments: [
        (ENOSPC, StorageError.Reason.noSpace, "no space left on the device (the disk is full)", 507),
        (EDQUOT, .quotaExceeded, "the disk quota is exceeded", 507),
        (EROFS, .readOnly, "the file system is read-only", 500),
        (EACCES, .permissionDenied, "permission denied (the server may not write in its data directory)", 500),
        (EPERM, .permissionDenied, "permission denied (the server may not write in its data directory)", 500),
        (EIO, .other(EIO), "input/output error", 500),
    ])
    func errnoBecomesWordsWithoutThePath(code: Int32, reason: StorageError.Reason, words: String, status: Int) {
        let error = StorageError(errno: code, path: Self.secretPath)
        #expect(error.reason == reason)
        #expect(error.description == words)
        #expect(error.httpStatus == status)
        #expect(!"\(error)".contains("secret-place") && !"\(error)".contains(".tmp-"))
        #expect(error.path == Self.secretPath)
        #expect(error.message("cannot save the template") == "cannot save the template: \(words)")
    }

    @Test func foundationErrorsAreReadForTheErrnoBehindThem() throws {
        // What Foundation's own writers throw: Cocoa 512 with the POSIX error underneath.
        let cocoa = NSError(domain: NSCocoaErrorDomain, code: CocoaError.fileWriteUnknown.rawValue,
                            userInfo: [NSFilePathErrorKey: Self.secretPath,
                                       NSUnderlyingErrorKey: NSError(domain: NSPOSIXErrorDomain, code: Int(ENOSPC))])
        #expect(StorageError(cocoa, path: "")?.reason == .noSpace)
        #expect(StorageError(NSError(domain: NSPOSIXErrorDomain, code: Int(EROFS)), path: "")?.reason == .readOnly)
        #expect(StorageError(CocoaError(.fileWriteOutOfSpace), path: "")?.reason == .noSpace)
        #expect(StorageError(CocoaError(.fileWriteVolumeReadOnly), path: "")?.reason == .readOnly)
        #expect(StorageError(CocoaError(.fileWriteNoPermission), path: "")?.reason == .permissionDenied)
        let itself = StorageError(errno: EDQUOT, path: "/a")
        #expect(StorageError(itself, path: "/b") == itself)
        // Errors with no errno are no storage errors.
        #expect(StorageError(OpenCVError(code: -1, message: "bad"), path: "") == nil)
        #expect(StorageError(CocoaError(.fileWriteUnknown), path: "") == nil)
    }

    @Test func aRealFailedWriteSaysWhyAndLeavesNoTemporaryFile() throws {
        let dir = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // The rename fails: a directory stands where the file goes.
        try FileManager.default.createDirectory(atPath: dir + "/taken", withIntermediateDirectories: false)
        #expect(throws: StorageError(errno: EISDIR, path: dir + "/taken")) {
            try AtomicFile.write(Data("x".utf8), to: dir + "/taken")
        }
        // A file stands where a directory should be.
        #expect(FileManager.default.createFile(atPath: dir + "/plain", contents: Data()))
        #expect(throws: StorageError(errno: ENOTDIR, path: dir + "/plain")) {
            try AtomicFile.write(Data("x".utf8), to: dir + "/plain/sub/file")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == ["plain", "taken"])
    }

    @Test func writesAreWholeWithTheModeAskedFor() throws {
        let dir = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/deep/er/token"
        try AtomicFile.write(Data("one\n".utf8), to: path, permissions: 0o600)
        try AtomicFile.write(Data(), to: dir + "/empty")
        #expect(FileManager.default.contents(atPath: path) == Data("one\n".utf8))
        #expect(FileManager.default.contents(atPath: dir + "/empty") == Data())
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(AtomicFile.probe(directory: dir) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == ["deep", "empty"])
    }

    @Test func countsByAreaAreInTheStateAndMetrics() {
        let stats = PipelineStats()
        let reporter = StorageFailureReporter(stats: stats)
        #expect(reporter.report(StorageError(errno: ENOSPC, path: "/x"), area: .templates, action: "a")?.reason == .noSpace)
        reporter.report(StorageError(errno: ENOSPC, path: "/x"), area: .events, action: "b")
        reporter.report(StorageError(errno: ENOSPC, path: "/x"), area: .events, action: "b")
        #expect(reporter.report(OpenCVError(code: 1, message: "not a write"), area: .faces, action: "c") == nil)
        let snapshot = stats.snapshot()
        #expect(snapshot.storageWriteFailures == [.templates: 1, .events: 2, .faces: 0])
        let state = ServerState(version: "t", uptimeSeconds: 0, status: SourceStatus(spec: "demo", name: "demo", state: .live), stats: snapshot, templates: [])
        #expect(state.storage == ServerState.Storage(writeFailures: 3,
                                                     writeFailuresByArea: ["templates": 1, "events": 2, "faces": 0]))
        let camera = CameraReading(name: "door", stats: snapshot, status: SourceStatus(spec: "demo", name: "demo", state: .live))
        let text = PrometheusText.render(server: ServerReading(), cameras: [camera], histograms: [])
        #expect(text.contains("# TYPE sightline_storage_write_failures_total counter\n"))
        #expect(text.contains("sightline_storage_write_failures_total{camera=\"door\",area=\"templates\"} 1\n"))
        #expect(text.contains("sightline_storage_write_failures_total{camera=\"door\",area=\"events\"} 2\n"))
        #expect(text.contains("sightline_storage_write_failures_total{camera=\"door\",area=\"faces\"} 0\n"))
    }
}
