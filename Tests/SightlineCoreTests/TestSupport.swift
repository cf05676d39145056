import Foundation
@testable import SightlineCore
@testable import SightlineHTTP

/// Paths the tests need: the repository and the shared test data beside it.
enum TestPaths {
    static let repository: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// ../shared/testdata, or SIGHTLINE_TEST_DATA.
    static let testData: String = ProcessInfo.processInfo.environment["SIGHTLINE_TEST_DATA"]
        ?? (repository as NSString).appendingPathComponent("../shared/testdata")

    static var demoTemplate: String { repository + "/config/demo-template.png" }

    static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "sightline-test-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}

extension AuthGuard {
    /// What the tests use: one admin token, "s3cret", viewing open (loopback).
    static func testing(viewOpen: Bool = true) -> AuthGuard {
        AuthGuard(tokens: TokenStore(fixed: [(name: "config", role: .admin, token: "s3cret")]),
                  policy: AccessPolicy(viewOpen: viewOpen, loopbackBound: true))
    }
}
