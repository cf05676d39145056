import Foundation
import Testing
@testable import SightlineSupport
@testable import SightlineHTTP
import SightlineTesting

@Suite struct SelfSignedCertificateTests {
    @Test func madeOnceForTheServedNamesAndRemadeWhenTheyChange() throws {
        let dir = try TestPaths.temporaryDirectory() + "/tls"
        let (files, made) = try SelfSignedCertificate.ensure(in: dir, names: ["localhost", "cam.example"],
                                                             addresses: ["127.0.0.1", "::1"])
        #expect(made)
        try files.validate()
        let certificate = try files.loadCertificate()
        #expect(certificate.dnsNames.contains("cam.example"))
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

    @Test func theCertificateReadsBackAsMade() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let made = try SelfSignedCertificate.make(names: ["cam.example", "localhost"], addresses: ["192.0.2.7", "::1", "not-an-address"],
                                                  now: now)
        #expect(made.keyPEM.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let certificate = try TLSCertificate(pem: made.certificatePEM)
        #expect(certificate.dnsNames == ["cam.example", "localhost"])
        #expect(certificate.ipAddresses == [[192, 0, 2, 7], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]])
        #expect(certificate.notValidAfter == now.addingTimeInterval(SelfSignedCertificate.lifetime))
        #expect(try TLSCertificate.privateKey(Data(made.keyPEM.utf8), matches: Data(made.certificatePEM.utf8)))
        #expect(throws: OpenSSLError.self) { try TLSCertificate(pem: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n") }
    }

    /// What OpenSSL's own command line reads in the certificate, when it is installed.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")))
    func opensslReadsTheExtensions() throws {
        let dir = try TestPaths.temporaryDirectory()
        let (files, _) = try SelfSignedCertificate.ensure(in: dir, names: ["localhost", "cam.example"],
                                                          addresses: ["127.0.0.1", "::1"])
        let text = try openssl(["x509", "-in", files.certificate, "-noout", "-text"])
        for expected in ["Version: 3 (0x2)", "Signature Algorithm: ecdsa-with-SHA256", "NIST CURVE: P-256",
                         "Subject: CN = localhost, O = Sightline (self-signed)",
                         "Issuer: CN = localhost, O = Sightline (self-signed)",
                         "X509v3 Basic Constraints: critical\n                CA:TRUE, pathlen:0",
                         "X509v3 Key Usage: critical\n                Digital Signature, Certificate Sign",
                         "X509v3 Extended Key Usage: \n                TLS Web Server Authentication",
                         "DNS:localhost, DNS:cam.example, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1"] {
            #expect(text.contains(expected), "\(expected) not in:\n\(text)")
        }
        let fingerprint = try openssl(["x509", "-in", files.certificate, "-noout", "-fingerprint", "-sha256"])
        #expect(fingerprint.trimmingCharacters(in: .whitespacesAndNewlines) == "sha256 Fingerprint=" + (try files.fingerprintSHA256()))
        // Its own root: a client that trusts it verifies it.
        let verified = try openssl(["verify", "-CAfile", files.certificate, files.certificate])
        #expect(verified.contains(": OK"))
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
        let made = try SelfSignedCertificate.ensure(in: dir + "/made", names: ["localhost"], addresses: []).files
        try "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".write(toFile: dir + "/k.pem", atomically: true, encoding: .utf8)
        let brokenKey = TLSFiles(certificate: made.certificate, privateKey: dir + "/k.pem")
        #expect { try brokenKey.validate() } throws: { error in
            "\(error)".hasPrefix("tls private key \(dir)/k.pem: OpenSSL: reading the private key")
        }
    }

    /// A certificate with another certificate's key (a renewal copied half-way) is
    /// refused before lws takes it: every handshake after would fail.
    @Test func aKeyThatIsNotTheCertificatesIsRefused() throws {
        let dir = try TestPaths.temporaryDirectory()
        let first = try SelfSignedCertificate.ensure(in: dir + "/first", names: ["localhost"], addresses: ["127.0.0.1"]).files
        let second = try SelfSignedCertificate.ensure(in: dir + "/second", names: ["localhost"], addresses: ["127.0.0.1"]).files
        let crossed = TLSFiles(certificate: second.certificate, privateKey: first.privateKey)
        #expect(throws: ConfigError.invalid(
            "tls: the private key in \(first.privateKey) does not match the certificate in \(second.certificate)")) {
            try crossed.validate()
        }
    }

    private func openssl(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
