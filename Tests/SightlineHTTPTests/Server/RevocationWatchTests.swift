import Foundation
import Synchronization
import Testing
@testable import SightlineSupport
@testable import SightlineHTTP

/// The revocation watch's finding and when it is handed over (the streams it
/// ends, through a live server, are in StreamServerTests).
struct RevocationWatchTests {
    @Test func aNoticeEndsOnlyStreamsCheckedBeforeTheReadWhoseCredentialIsGone() {
        let notice = RevocationNotice(valid: [Credential(name: "hall", role: .viewer)], startedNanos: 100)
        #expect(notice.revokes(Credential(name: "lobby", role: .viewer), checkedNanos: 99))
        #expect(!notice.revokes(Credential(name: "hall", role: .viewer), checkedNanos: 99))
        // The same name with another role is another credential, and it is gone.
        #expect(notice.revokes(Credential(name: "hall", role: .admin), checkedNanos: 99))
        // Checked once the read had begun: its token may have been added
        // after the read, so this notice cannot tell; the next one does.
        #expect(!notice.revokes(Credential(name: "lobby", role: .viewer), checkedNanos: 100))
    }

    @Test func aChangedRevocationCountIsHandedOverOnItsCheckAndTheNext() {
        // The store's count on each check: unchanged, unchanged, revoked, then unchanged.
        let counts: [UInt64] = [0, 0, 1, 1, 1, 1]
        let script = Script(counts: counts)
        let watch = RevocationWatch(read: { script.read() }, deliver: { script.delivered($0) })
        watch.start()
        #expect(script.allRead.wait(timeout: .now() + 30) == .success)
        watch.stop()
        // Delivered after the third check and, once more, after the fourth; never before the change.
        #expect(script.deliveries == [3, 4])
    }
}

/// A token store's answers, one per check, and what the watch delivered (by the check it followed).
private final class Script: Sendable {
    let allRead = DispatchSemaphore(value: 0)
    private let counts: [UInt64]
    private let state = Locked((reads: 0, deliveries: [Int]()))

    init(counts: [UInt64]) {
        self.counts = counts
    }

    func read() -> (revocations: UInt64, valid: Set<Credential>) {
        let index = state.withLock { state -> Int in
            state.reads += 1
            return state.reads
        }
        if index == counts.count { allRead.signal() }
        return (counts[min(index, counts.count) - 1], [])
    }

    func delivered(_ notice: RevocationNotice) {
        state.withLock { $0.deliveries.append($0.reads) }
    }

    var deliveries: [Int] { state.withLock { $0.deliveries } }
}
