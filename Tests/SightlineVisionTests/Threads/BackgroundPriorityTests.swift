import Foundation
import Glibc
import Testing
@testable import SightlineSupport
@testable import SightlineVision
import SightlineTesting

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

    @Test("the face worker's thread is lowered by faceNiceness, less than other background threads")
    func theFaceWorkerIsLoweredLess() throws {
        let before = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        let detector = NicenessRecordingDetector()
        let worker = FaceDetectionWorker(detector: detector, limit: 1)
        let frame = ImageBuffer(width: 8, height: 8, channels: 3)
        #expect(worker.offer(frame, gray: nil, capturedAt: 1))
        _ = waitUntil { detector.seen != nil }
        worker.stop()
        #expect(BackgroundPriority.faceNiceness < BackgroundPriority.niceness)
        #expect(detector.seen == min(19, before + BackgroundPriority.faceNiceness))
    }
}

/// Records the nice value of the thread it is called on.
final class NicenessRecordingDetector: FaceDetector, @unchecked Sendable {
    // `recorded` is guarded by `lock`: the face worker's thread writes, the test reads.
    let name = "niceness-recorder"
    private let lock = NSLock()
    private var recorded: Int32?
    var seen: Int32? { lock.withLock { recorded } }
    func detect(in frame: ImageBuffer, gray: ImageBuffer?, limit: Int) throws -> [FaceObservation] {
        let value = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        lock.withLock { recorded = value }
        return []
    }
}
