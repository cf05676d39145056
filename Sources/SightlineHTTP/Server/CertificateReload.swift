import CSightlineLWS
import Foundation
import Logging

/// Reads the certificate files again (a renewed certificate) and hands them
/// to libwebsockets for new connections; open ones keep theirs. Asked for
/// with `StreamServer.reloadCertificate` (any thread, through the
/// `ServiceInbox`), done on the service thread, which owns the context.
struct CertificateReload {
    let tls: TLSFiles
    let logger: Logger

    /// Service thread.
    func reload(_ context: OpaquePointer) {
        do {
            try tls.validate()
            let certificate = try Data(contentsOf: URL(fileURLWithPath: tls.certificate))
            let key = try Data(contentsOf: URL(fileURLWithPath: tls.privateKey))
            let status = certificate.withUnsafeBytes { c in
                key.withUnsafeBytes { k in
                    lws_tls_cert_updated(context, tls.certificate, tls.privateKey,
                                         c.baseAddress?.assumingMemoryBound(to: CChar.self), certificate.count,
                                         k.baseAddress?.assumingMemoryBound(to: CChar.self), key.count)
                }
            }
            if status == 0 {
                logger.notice("certificate reloaded", metadata: ["fingerprint": "\((try? tls.fingerprintSHA256()) ?? "?")"])
            } else {
                logger.error("the new certificate was not taken; the old one stays", metadata: ["status": "\(status)"])
            }
        } catch {
            logger.error("cannot reload the certificate; the old one stays", metadata: ["error": "\(error)"])
        }
    }
}
