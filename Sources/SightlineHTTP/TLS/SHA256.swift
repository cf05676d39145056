import CSightlineTLS
import SightlineSupport

/// SHA-256 through OpenSSL (the tokens' digests).
enum SHA256 {
    static func hash(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        let input = Array(bytes)
        // OpenSSL's SHA-256 fails only when it cannot allocate, which Swift treats as fatal too.
        try! input.withUnsafeBytes { raw in
            try digest.withUnsafeMutableBufferPointer { out in
                try OpenSSLError.check { sl_tls_sha256(raw.baseAddress, raw.count, out.baseAddress, $0) }
            }
        }
        return digest
    }
}
