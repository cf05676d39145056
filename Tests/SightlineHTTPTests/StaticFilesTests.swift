import Foundation
import Testing
@testable import SightlineHTTP
import SightlineTesting

@Suite struct StaticFilesTests {
    private func makeRoot() throws -> String {
        let root = try TestPaths.temporaryDirectory()
        try "<h1>hi</h1>".write(toFile: root + "/index.html", atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: root + "/js", withIntermediateDirectories: true)
        try "export const x = 1;".write(toFile: root + "/js/app.js", atomically: true, encoding: .utf8)
        try "secret".write(toFile: root + "/../outside-\((root as NSString).lastPathComponent).txt", atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: root + "/leak.txt", withDestinationPath: "/etc/hostname")
        return root
    }

    @Test func servesFilesWithTypes() throws {
        let files = StaticFiles(root: try makeRoot())
        let index = files.response(for: "/")
        #expect(index.status == 200 && index.contentType.hasPrefix("text/html"))
        #expect(String(decoding: index.bodyData ?? Data(), as: UTF8.self) == "<h1>hi</h1>")
        let script = files.response(for: "/js/app.js")
        #expect(script.status == 200 && script.contentType.hasPrefix("text/javascript"))
        #expect(files.response(for: "/js/missing.js").status == 404)
    }

    @Test func refusesEveryWayOut() throws {
        let root = try makeRoot()
        let files = StaticFiles(root: root)
        let outside = "/../outside-\((root as NSString).lastPathComponent).txt"
        for path in [outside, "/%2e%2e/etc/passwd", "/js/..%2f..%2fetc/passwd", "/./index.html", "/a\\..\\b", "/leak.txt"] {
            let response = files.response(for: path)
            #expect(response.status == 403 || response.status == 404, "\(path) gave \(response.status)")
            #expect(!String(decoding: response.bodyData ?? Data(), as: UTF8.self).contains("secret"))
        }
        #expect(files.response(for: "/leak.txt").status == 403)
    }
}
