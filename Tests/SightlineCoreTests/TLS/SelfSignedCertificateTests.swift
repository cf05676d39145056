import Foundation
import Testing
import X509
@testable import SightlineCore

@Suite struct SelfSignedCertificateTests {
    @Test func madeOnceForTheServedNamesAndRemadeWhenTheyChange() throws {
        let dir = try TestPaths.temporaryDirectory() + "/tls"
        let (files, made) = try SelfSignedCertificate.ensure(in: dir, names: ["localhost", "cam.example"],
                                                             addresses: ["127.0.0.1", "::1"])
        #expect(made)
        try files.validate()
        let certificate = try files.loadCertificate()
        let alternatives = try #require(try certificate.extensions.subjectAlternativeNames)
        #expect(alternatives.contains(.dnsName("cam.example")))
        #expect(SelfSignedCertificate.covers(certificate, names: ["localhost"], addresses: ["::1", "127.0.0.1"]))
        #expect(!SelfSignedCertificate.covers(certificate, names: ["other.example"], addresses: []))
        #expect(certificate.notValidAfter > Date().addingTimeInterval(300 * 24 * 3600))
        let keyMode = try FileManager.default.attributesOfItem(atPath: files.privateKey)[.posixPermissions] as? Int
        #expect(keyMode == 0o600)
        let fingerprint = try files.fingerprintSHA256()
        #expect(fingerprint.count == 32 * 3 - 1 && fingerprint.split(separator: ":").count == 32)

        let again = try SelfSignedCertificate.ensure(in: dir, names: ["localhost"], addresses: ["127.0.0.1"])
        let againPrint = try again.files.fingerprintSHA256()
        #expect(!again.made && againPrint == fingerprint)
        let widened = try SelfSignedCertificate.ensure(in: dir, names: ["localhost"], addresses: ["127.0.0.2"])
        let widenedPrint = try widened.files.fingerprintSHA256()
        #expect(widened.made && widenedPrint != fingerprint)
        // One that expires within 30 days is made again.
        let later = try SelfSignedCertificate.ensure(in: dir, names: ["localhost"], addresses: ["127.0.0.2"],
                                                     now: Date().addingTimeInterval(340 * 24 * 3600))
        #expect(later.made)
    }

    @Test func servedNamesFollowTheBoundAddress() {
        let loopback = SelfSignedCertificate.servedNames(host: "127.0.0.1")
        #expect(loopback.names.contains("localhost") && loopback.addresses.contains("127.0.0.1"))
        let named = SelfSignedCertificate.servedNames(host: "cam.local")
        #expect(named.names.contains("cam.local"))
        let all = SelfSignedCertificate.servedNames(host: "0.0.0.0")
        #expect(all.addresses.contains("127.0.0.1") && !all.addresses.contains("0.0.0.0"))
    }

    @Test func brokenFilesAreClearErrors() throws {
        let dir = try TestPaths.temporaryDirectory()
        try "not pem".write(toFile: dir + "/c.pem", atomically: true, encoding: .utf8)
        let files = TLSFiles(certificate: dir + "/c.pem", privateKey: dir + "/missing.pem")
        #expect(throws: ConfigError.self) { try files.validate() }
    }
}
