import CSightlineTLS
import Foundation
import SightlineSupport

/// `tls: auto`: a self-signed certificate (ECDSA P-256, a year) for the
/// names and addresses the server answers on, made with OpenSSL (the
/// CSightlineTLS shim) into `<data-dir>/tls/` at first start and kept while
/// it still covers them and has more than 30 days to run. Its SHA-256
/// fingerprint is what a user compares with what their browser shows.
public enum SelfSignedCertificate {
    public static let renewBefore: TimeInterval = 30 * 24 * 3600
    public static let lifetime: TimeInterval = 365 * 24 * 3600
    static let organization = "Sightline (self-signed)"

    /// The certificate and key files in `directory` for these names and
    /// addresses, made (again) when missing, expiring or not covering them.
    public static func ensure(in directory: String, names: [String], addresses: [String],
                              now: Date = Date()) throws -> (files: TLSFiles, made: Bool) {
        let files = TLSFiles(certificate: (directory as NSString).appendingPathComponent("cert.pem"),
                             privateKey: (directory as NSString).appendingPathComponent("key.pem"))
        if let existing = try? files.loadCertificate(), FileManager.default.fileExists(atPath: files.privateKey),
           existing.notValidAfter > now.addingTimeInterval(renewBefore),
           covers(existing, names: names, addresses: addresses) {
            return (files, false)
        }
        let made = try make(names: names, addresses: addresses, now: now)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        try AtomicFile.write(Data(made.keyPEM.utf8), to: files.privateKey, permissions: 0o600)
        try AtomicFile.write(Data(made.certificatePEM.utf8), to: files.certificate, permissions: 0o644)
        return (files, true)
    }

    /// A new P-256 key and a certificate for it, signed by itself, as PEM
    /// (the key unencrypted, PKCS#8). Valid from five minutes before `now`
    /// for `lifetime`; CN is the first name; a CA of its own (pathlen 0) so
    /// that a browser or a client can trust it as its own root.
    static func make(names: [String], addresses: [String], now: Date) throws -> (certificatePEM: String, keyPEM: String) {
        let notBefore = Int64(now.timeIntervalSince1970) - 300
        let notAfter = Int64(now.addingTimeInterval(lifetime).timeIntervalSince1970)
        var certificatePEM: UnsafeMutablePointer<CChar>?
        var keyPEM: UnsafeMutablePointer<CChar>?
        defer { free(certificatePEM); free(keyPEM) }
        try withCStrings(names) { dns in
            try withCStrings(addresses.filter { ipBytes($0) != nil }) { ips in
                try OpenSSLError.check {
                    sl_tls_make_self_signed(names.first ?? "sightline", organization, dns, Int32(dns.count),
                                            ips, Int32(ips.count), notBefore, notAfter, &certificatePEM, &keyPEM, $0)
                }
            }
        }
        return (String(cString: certificatePEM!), String(cString: keyPEM!))
    }

    /// Whether every name and address is among the certificate's alternative names.
    static func covers(_ certificate: TLSCertificate, names: [String], addresses: [String]) -> Bool {
        let dns = Set(certificate.dnsNames.map { $0.lowercased() })
        let ips = Set(certificate.ipAddresses)
        return names.allSatisfy { dns.contains($0.lowercased()) } && addresses.compactMap(ipBytes).allSatisfy { ips.contains($0) }
    }

    /// The address's bytes (4 for IPv4, 16 for IPv6), or nil when it is not an address.
    static func ipBytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    /// The names and addresses a server bound to `host` answers on: this
    /// machine's name and `localhost`, loopback, and the bound address (every
    /// interface's address when bound to all of them).
    public static func servedNames(host: String) -> (names: [String], addresses: [String]) {
        var buffer = [CChar](repeating: 0, count: 256)
        var names = ["localhost"]
        if gethostname(&buffer, buffer.count) == 0 {
            let name = String(cChars: buffer)
            if !name.isEmpty && name != "localhost" { names.append(name) }
        }
        var addresses = ["127.0.0.1", "::1"]
        if host == "0.0.0.0" || host == "::" || host.isEmpty {
            addresses += interfaceAddresses()
        } else if ipBytes(host) != nil {
            addresses.append(host)
        } else {
            names.append(host)
        }
        var seen = Set<String>()
        return (names.filter { seen.insert($0).inserted }, addresses.filter { seen.insert($0).inserted })
    }

    private static func interfaceAddresses() -> [String] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var found: [String] = []
        for item in sequence(first: first, next: { $0.pointee.ifa_next }) {
            guard let address = item.pointee.ifa_addr else { continue }
            let family = Int32(address.pointee.sa_family)
            guard family == AF_INET || family == AF_INET6 else { continue }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            let source: UnsafeRawPointer = family == AF_INET
                ? UnsafeRawPointer(address).advanced(by: MemoryLayout<sockaddr_in>.offset(of: \sockaddr_in.sin_addr)!)
                : UnsafeRawPointer(address).advanced(by: MemoryLayout<sockaddr_in6>.offset(of: \sockaddr_in6.sin6_addr)!)
            if inet_ntop(family, source, &text, socklen_t(text.count)) != nil {
                let value = String(cChars: text)
                if !value.hasPrefix("fe80") { found.append(value) }
            }
        }
        return found
    }
}

/// A certificate chain and its private key, as PEM files.
public struct TLSFiles: Sendable, Equatable {
    public var certificate: String
    public var privateKey: String

    public init(certificate: String, privateKey: String) {
        self.certificate = certificate
        self.privateKey = privateKey
    }

    /// The first certificate of the certificate file.
    func loadCertificate() throws -> TLSCertificate {
        try TLSCertificate(pem: String(contentsOfFile: certificate, encoding: .utf8))
    }

    /// SHA-256 of the first certificate's DER, as `AB:CD:...` (what browsers show).
    public func fingerprintSHA256() throws -> String {
        try loadCertificate().sha256.map { String(format: "%02X", $0) }.joined(separator: ":")
    }

    /// Reads both files and checks that they parse as PEM and that the key is
    /// the certificate's, with a clear error. At start, and before a reload
    /// hands them to lws: a pair that does not match would be taken, and every
    /// handshake after it would fail.
    public func validate() throws {
        var contents: [Data] = []
        for (path, what) in [(certificate, "certificate"), (privateKey, "private key")] {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ConfigError.invalid("tls \(what) \(path): cannot read it")
            }
            let text = String(decoding: data, as: UTF8.self)
            guard text.contains("-----BEGIN ") else {
                throw ConfigError.invalid("tls \(what) \(path): not a PEM file")
            }
            if what == "private key" && !text.contains("PRIVATE KEY-----") {
                throw ConfigError.invalid("tls private key \(path): no private key in it (no BEGIN ... PRIVATE KEY block)")
            }
            contents.append(data)
        }
        do {
            _ = try TLSCertificate(pem: String(decoding: contents[0], as: UTF8.self))
        } catch {
            throw ConfigError.invalid("tls certificate \(certificate): \(error)")
        }
        let matches: Bool
        do {
            matches = try TLSCertificate.privateKey(contents[1], matches: contents[0])
        } catch {
            throw ConfigError.invalid("tls private key \(privateKey): \(error)")
        }
        guard matches else {
            throw ConfigError.invalid("tls: the private key in \(privateKey) does not match the certificate in \(certificate)")
        }
    }
}
