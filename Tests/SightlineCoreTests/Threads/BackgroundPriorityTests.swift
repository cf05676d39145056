import Foundation
import Glibc
import Testing
@testable import SightlineCore

@Suite("Background thread priority")
struct BackgroundPriorityTests {
    @Test("a background thread runs at a lower priority; the thread that started it keeps its own")
    func lowersOnlyTheCallingThread() {
        let before = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var inside: Int32 = 0   // written by the thread before it signals `done`
        let thread = Thread {
            BackgroundPriority.lowerCurrentThread()
            inside = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
            done.signal()
        }
        thread.start()
        done.wait()
        #expect(inside == min(19, before + BackgroundPriority.niceness))
        #expect(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) == before)
    }
}
