import CSightlineTLS
import Foundation
import SightlineSupport

/// What Sightline reads from a PEM certificate (the first of a chain): when
/// it expires, the names and addresses it is for, and its fingerprint.
public struct TLSCertificate: Sendable, Equatable {
    public var notValidAfter: Date
    /// The subjectAltName DNS names, as written in the certificate.
    public var dnsNames: [String]
    /// The subjectAltName IP addresses: 4 bytes for IPv4, 16 for IPv6.
    public var ipAddresses: [[UInt8]]
    /// SHA-256 of the DER.
    public var sha256: [UInt8]

    public init(pem: String) throws {
        var read = sl_tls_certificate()
        var text = pem
        try text.withUTF8 { bytes in
            try bytes.withMemoryRebound(to: CChar.self) { chars in
                try OpenSSLError.check { sl_tls_certificate_read(chars.baseAddress, chars.count, &read, $0) }
            }
        }
        defer { sl_tls_certificate_release(&read) }
        notValidAfter = Date(timeIntervalSince1970: TimeInterval(read.not_after))
        sha256 = withUnsafeBytes(of: read.sha256) { Array($0) }
        var dnsNames: [String] = [], ipAddresses: [[UInt8]] = []
        for name in UnsafeBufferPointer(start: read.alt_names, count: Int(read.alt_name_count)) {
            let bytes = Array(UnsafeBufferPointer(start: name.bytes, count: name.length))
            switch Int(name.kind) {
            case SL_TLS_NAME_DNS: dnsNames.append(String(decoding: bytes, as: UTF8.self))
            case SL_TLS_NAME_IP: ipAddresses.append(bytes)
            default: break
            }
        }
        self.dnsNames = dnsNames
        self.ipAddresses = ipAddresses
    }

    /// Whether the private key in `keyPEM` belongs to the certificate in
    /// `certificatePEM` (its first). Throws when either does not parse.
    static func privateKey(_ keyPEM: Data, matches certificatePEM: Data) throws -> Bool {
        var matches: Int32 = 0
        try keyPEM.withUnsafeBytes { key in
            try certificatePEM.withUnsafeBytes { certificate in
                try OpenSSLError.check {
                    sl_tls_private_key_matches(key.baseAddress?.assumingMemoryBound(to: CChar.self), key.count,
                                               certificate.baseAddress?.assumingMemoryBound(to: CChar.self),
                                               certificate.count, &matches, $0)
                }
            }
        }
        return matches == 1
    }
}
