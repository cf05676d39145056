import Foundation

/// Paths the tests need: the repository and the shared test data beside it.
package enum TestPaths {
    package static let repository: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }  // Tests/SightlineTesting/TestPaths.swift
        return url.path
    }()

    /// ../shared/testdata, or SIGHTLINE_TEST_DATA.
    package static let testData: String = ProcessInfo.processInfo.environment["SIGHTLINE_TEST_DATA"]
        ?? (repository as NSString).appendingPathComponent("../shared/testdata")

    package static var demoTemplate: String { repository + "/config/demo-template.png" }

    package static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "sightline-test-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}
