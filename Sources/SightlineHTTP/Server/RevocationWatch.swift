import Foundation
import Synchronization
import SightlineSupport

/// What the revocation watch found when the token store's revocation count
/// changed: every credential still valid, and when it began to look. The
/// service thread ends each stream whose credential is not in `valid` and
/// was checked before `startedNanos`: the store was read after that check,
/// so the token went after the stream opened. A stream checked later is
/// left to the next notice (the watch sends each finding twice, one check
/// apart), so a token added meanwhile never ends a stream wrongly.
struct RevocationNotice: Sendable {
    let valid: Set<Credential>
    let startedNanos: UInt64

    /// Whether a stream whose credential was checked at `checkedNanos` must end.
    func revokes(_ credential: Credential, checkedNanos: UInt64) -> Bool {
        checkedNanos < startedNanos && !valid.contains(credential)
    }
}

/// Watches the token store for revocations (here, or by `sightline token
/// revoke`, seen through tokens.json) on its own thread,
/// `sightline.revocations`, so the service thread never stats or reads the
/// file for it: every `intervalNanos` it asks the store, and when the store's
/// revocation count changed it hands the valid credentials to `deliver`
/// (the `ServiceInbox`, which wakes the service thread), and again after the
/// next check.
///
/// Threads: `start` and `stop` from the main thread; the check on
/// `sightline.revocations` only (the count it last saw is that thread's
/// local); the token store guards its own state.
final class RevocationWatch: Sendable {
    /// A revoked stream ends within about this long; asking the store (a stat
    /// of tokens.json) four times a second costs nothing worth counting.
    static let intervalNanos = 250_000_000

    /// The store's revocation count and the credentials valid with it, read together.
    typealias Read = @Sendable () -> (revocations: UInt64, valid: Set<Credential>)

    private let read: Read
    private let deliver: @Sendable (RevocationNotice) -> Void
    private let stopping = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    /// Whether the thread was started, and whether it was stopped.
    private let state = Locked((started: false, stopped: false))

    /// `read`: how the store is asked (`tokens.validCredentials`; tests wrap it to see which thread asks).
    init(read: @escaping Read, deliver: @escaping @Sendable (RevocationNotice) -> Void) {
        self.read = read
        self.deliver = deliver
    }

    convenience init(tokens: TokenStore, deliver: @escaping @Sendable (RevocationNotice) -> Void) {
        self.init(read: { tokens.validCredentials() }, deliver: deliver)
    }

    func start() {
        guard state.withLock({ state -> Bool in
            defer { state.started = true }
            return !state.started && !state.stopped
        }) else { return }
        let thread = Thread { [self] in
            Thread.setOSName("sightline.revocations")
            // The store counts from 0 when it is opened, as this does.
            var seen: UInt64 = 0
            var again = false
            while stopping.wait(timeout: .now() + .nanoseconds(Self.intervalNanos)) == .timedOut {
                let startedNanos = MonotonicClock.nanos()
                let found = read()
                let changed = found.revocations != seen
                guard changed || again else { continue }
                seen = found.revocations
                // Once more on the next check: a stream whose credential was
                // checked while this read was under way is judged by that one.
                again = changed
                deliver(RevocationNotice(valid: found.valid, startedNanos: startedNanos))
            }
            finished.signal()
        }
        thread.name = "sightline.revocations"
        thread.start()
    }

    /// Ends the thread (if it runs) and waits for it; once.
    func stop() {
        guard state.withLock({ state -> Bool in
            defer { state.stopped = true }
            return state.started && !state.stopped
        }) else { return }
        stopping.signal()
        finished.wait()
    }
}
