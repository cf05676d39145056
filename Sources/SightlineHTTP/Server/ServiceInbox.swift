import Foundation
import SightlineSupport
import Synchronization

/// What other threads hand the service thread, each followed by a wake-up:
/// the request worker's answers, a certificate reload asked for, the
/// revocation watch's newest finding. The service thread takes it all on
/// LWS_CALLBACK_EVENT_WAIT_CANCELLED (see `CallbackDispatch`).
///
/// Threads: posted from any thread, taken on the service thread; the mail
/// is in a `Mutex`.
final class ServiceInbox: Sendable {
    struct Mail: Sendable {
        /// Answers from the worker, by connection id.
        var answers: [(id: UInt64, response: HTTPResponse)] = []
        /// `StreamServer.reloadCertificate` was called.
        var reloadCertificate = false
        /// The newest credential check (a newer one supersedes an older one: it is the whole valid set, later).
        var revocation: RevocationNotice?
    }

    private let mail = Locked(Mail())
    private let loop: ServiceLoop

    init(waking loop: ServiceLoop) {
        self.loop = loop
    }

    /// Any thread (the worker's): a slow route's answer for connection `id`.
    func post(answer response: HTTPResponse, for id: UInt64) {
        mail.withLock { $0.answers.append((id, response)) }
        loop.wake()
    }

    /// Any thread.
    func requestCertificateReload() {
        mail.withLock { $0.reloadCertificate = true }
        loop.wake()
    }

    /// Any thread (the revocation watch's).
    func post(_ notice: RevocationNotice) {
        mail.withLock { $0.revocation = notice }
        loop.wake()
    }

    /// Service thread: everything posted since the last take.
    func take() -> Mail {
        mail.withLock { mail in
            defer { mail = Mail() }
            return mail
        }
    }
}
