import Foundation
import Testing
@testable import SightlineCore

/// A detector that blocks until the test opens its gate, then finds one face.
final class GatedFaceDetector: FaceDetector, @unchecked Sendable {
    let name = "gated-fake"
    let gate = DispatchSemaphore(value: 0)
    let lock = NSLock()
    var calls = 0
    func detect(in frame: ImageBuffer, gray: ImageBuffer?, limit: Int) throws -> [FaceObservation] {
        lock.withLock { calls += 1 }
        gate.wait()
        return [FaceObservation(box: (x: 40, y: 30, w: 50, h: 60), score: 0.9)]
    }
}

@Suite struct FaceStageTests {
    private func frame(_ index: Int) -> FrameContext {
        FrameContext(frame: Frame(seq: UInt64(index + 1), capturedAt: Double(index) / 30,
                                  capturedNanos: MonotonicClock.nanos(), image: ImageBuffer(width: 160, height: 120)))
    }

    @Test func framesGoThroughWhileTheDetectorIsBusy() throws {
        let detector = GatedFaceDetector()
        let stage = FaceStage(detector: detector, tracker: FaceTracker(),
                              service: FaceService(recognizer: try FaceRecognizer(store: nil)),
                              detectEvery: 1, limit: 10)
        // The detector gets the first frame and is stuck on it; ten more frames still pass, without faces yet.
        var first = frame(0)
        try stage.process(&first)
        #expect(waitUntil { detector.lock.withLock { detector.calls } == 1 })
        for index in 1..<10 {
            var context = frame(index)
            try stage.process(&context)
            #expect(context.detections.isEmpty)
        }
        #expect(detector.lock.withLock { detector.calls } == 1, "busy detector was handed another frame")
        // Let every detection finish: the face appears and keeps its id.
        for _ in 0..<100 { detector.gate.signal() }
        var ids: Set<Int> = []
        var facesSeen = 0
        for index in 10..<200 where facesSeen < 5 {
            var context = frame(index)
            try stage.process(&context)
            let faces = context.detections.filter { $0.kind == .face }
            facesSeen += faces.count
            ids.formUnion(faces.compactMap(\.id))
            Thread.sleep(forTimeInterval: 0.005)
        }
        #expect(facesSeen >= 5)
        #expect(ids.count == 1)
    }
}
