import Foundation
import Testing
@testable import SightlineVision

/// OpenCV's thread count is process-wide, and changing it while other
/// threads run OpenCV (the other tests, run in parallel) crashed the test run
/// inside libtbb: so the count is set in a child process (an exit test), and
/// this process's tests never change it.
@Suite struct OpenCVThreadsTests {
    @Test func theCountIsClampedToOneToSixtyFour() {
        #expect(OpenCVThreads.clamped(0) == 1, "0 would mean OpenCV's own default; Sightline asks for at least 1")
        #expect(OpenCVThreads.clamped(-3) == 1)
        #expect(OpenCVThreads.clamped(2) == 2)
        #expect(OpenCVThreads.clamped(500) == 64)
    }

    @Test func theCountReachesOpenCV() async {
        await #expect(processExitsWith: .success) {
            OpenCVThreads.set(1)
            guard OpenCVThreads.current == 1 else { exit(1) }
            OpenCVThreads.set(2)
            guard OpenCVThreads.current == 2 else { exit(2) }
            OpenCVThreads.set(0)
            guard OpenCVThreads.current == 1 else { exit(3) }
        }
    }
}
