import Testing
@testable import SightlineCore

@Suite struct OpenCVThreadsTests {
    @Test func theCountIsSetAndClamped() {
        let before = OpenCVThreads.current
        defer { OpenCVThreads.set(max(1, before)) }
        OpenCVThreads.set(1)
        #expect(OpenCVThreads.current == 1)
        OpenCVThreads.set(2)
        #expect(OpenCVThreads.current == 2)
        OpenCVThreads.set(0)
        #expect(OpenCVThreads.current == 1, "0 would mean OpenCV's own default; Sightline asks for at least 1")
    }
}
