import Foundation
import Testing
@testable import SightlineSupport
@testable import SightlineVision
@testable import SightlinePipeline
import SightlineTesting

/// A detector that blocks until the test opens its gate, then finds one face.
final class GatedFaceDetector: FaceDetector, @unchecked Sendable {
    let name = "gated-fake"
    let gate = DispatchSemaphore(value: 0)
    let lock = NSLock()
    var calls = 0
    func detect(in frame: ImageBuffer, gray: ImageBuffer?, limit: Int) throws -> [FaceObservation] {
        lock.withLock { calls += 1 }
        gate.wait()
        return [FaceObservation(box: PixelRect(x: 40, y: 30, w: 50, h: 60), score: 0.9)]
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
            #expect(waitUntil { stage.detectionIdle })  // the pass this frame started has ended
        }
        #expect(facesSeen >= 5)
        #expect(ids.count == 1)
    }

    private func frame(_ index: Int, level: UInt8, fps: Double = 30) -> FrameContext {
        let image = ImageBuffer(width: 160, height: 120)
        image.bytes.update(repeating: level, count: image.byteCount)
        return FrameContext(frame: Frame(seq: UInt64(index + 1), capturedAt: Double(index) / fps,
                                         capturedNanos: MonotonicClock.nanos(), image: image))
    }

    /// Feeds `stage` one frame of the given gray level at a time, 30 fps
    /// apart, and returns that frame's face detections.
    private func feeder(_ stage: FaceStage) -> (UInt8) throws -> [Detection] {
        var index = 0
        return { level in
            var context = frame(index, level: level)
            index += 1
            try stage.process(&context)
            return context.detections.filter { $0.kind == .face }
        }
    }

    @Test func aCutEndsEveryFaceAtOnceAndDropsADetectionOfTheOldPicture() throws {
        let detector = GatedFaceDetector()
        let stats = PipelineStats()
        let stage = FaceStage(detector: detector, tracker: FaceTracker(),
                              service: FaceService(recognizer: try FaceRecognizer(store: nil)),
                              detectEvery: 1, limit: 10, stats: stats)
        defer { for _ in 0..<10 { detector.gate.signal() } }
        let next = feeder(stage)
        // Picture A: the first pass finds the face, which is then tracked.
        _ = try next(40)
        #expect(waitUntil { detector.lock.withLock { detector.calls } == 1 })
        detector.gate.signal()
        #expect(waitUntil { stage.detectionResultWaiting })
        var before: Int?
        for _ in 0..<200 where before == nil {
            before = try next(40).first?.id
        }
        let firstID = try #require(before)
        #expect(stats.snapshot().faceSceneCuts == 0)
        // The next pass on picture A is under way (the gate holds it) when the picture is cut to B.
        for _ in 0..<200 where stage.detectionIdle {
            _ = try next(40)
        }
        #expect(waitUntil { detector.lock.withLock { detector.calls } == 2 })
        #expect(try next(220).isEmpty, "a face of the old picture was drawn on the new one")
        #expect(stats.snapshot().faceSceneCuts == 1)
        // The pass on A ends; its face is dropped, and B's own pass starts.
        detector.gate.signal()
        #expect(waitUntil { detector.lock.withLock { detector.calls } == 3 })
        for _ in 0..<10 { #expect(try next(220).isEmpty) }
        // B's pass finds its face: a new face, with a new id.
        detector.gate.signal()
        #expect(waitUntil { stage.detectionResultWaiting })
        var after: Int?
        for _ in 0..<200 where after == nil {
            after = try next(220).first?.id
        }
        #expect(after != nil && after != firstID)
        #expect(stats.snapshot().faceSceneCuts == 1)
    }

    /// Finds one face on a bright picture and none on a dark one (the cut-frame pass).
    final class BrightPictureDetector: FaceDetector {
        let name = "bright-fake"
        var calls = 0
        func detect(in frame: ImageBuffer, gray: ImageBuffer?, limit: Int) throws -> [FaceObservation] {
            calls += 1
            return frame.bytes[0] > 128 ? [FaceObservation(box: PixelRect(x: 60, y: 40, w: 30, h: 30), score: 0.9, roll: 12)] : []
        }
    }

    @Test("the faces of a new picture are boxed on its first frame by the cut-frame pass, while the worker's pass is under way")
    func aNewPictureIsBoxedOnItsFirstFrame() throws {
        let worker = GatedFaceDetector()
        let cut = BrightPictureDetector()
        let stage = FaceStage(detector: worker, tracker: FaceTracker(),
                              service: FaceService(recognizer: try FaceRecognizer(store: nil)),
                              detectEvery: 1, limit: 10, cutDetector: cut)
        defer { for _ in 0..<10 { worker.gate.signal() } }
        let next = feeder(stage)
        // The first frame is a new picture (dark: nothing), the next ones are not.
        #expect(try next(40).isEmpty)
        #expect(cut.calls == 1)
        #expect(try next(40).isEmpty)
        #expect(cut.calls == 1)
        // A cut to a bright picture: its face is boxed on that very frame (the
        // worker is still held), upright until the worker's pass reads its roll,
        // and kept on the frames after.
        let first = try next(220)
        #expect(cut.calls == 2)
        let face = try #require(first.first)
        #expect(first.count == 1)
        #expect(face.roll == nil)
        let ids = try (0..<5).map { _ in try next(220).first?.id }
        #expect(ids.allSatisfy { $0 == face.id })
    }

    @Test("the fine passes after the first on a new picture run back to back; then passes keep the active pace")
    func finePassesOfANewPictureRunBackToBack() throws {
        let detector = FineRecordingDetector()
        let stage = FaceStage(detector: detector, tracker: FaceTracker(),
                              service: FaceService(recognizer: try FaceRecognizer(store: nil)),
                              detectEvery: 1, limit: 10, policy: FaceDetectionPolicy(maxRate: 10, idleRate: 2))
        // 30 fps frames, each handed over once the last detection has ended.
        for index in 0..<16 {
            var context = frame(index, level: 90)
            context.frame.image.bytes[0] = UInt8(index)  // which frame a pass got (too small a change for the probe)
            try stage.process(&context)
            #expect(waitUntil { stage.detectionIdle })
        }
        let passes = detector.lock.withLock { detector.passes }
        #expect(passes.map(\.frame) == [0, 1, 2, 3, 6, 9, 12, 15])
        #expect(passes.map(\.fine) == [nil, 0, 1, 2, nil, nil, nil, nil])
    }

    @Test("at 25 fps the active pace of 10 passes a second is kept on average, not rounded up to every 3rd frame")
    func passesKeepTheirPaceOnFramesThatDoNotDivideIt() throws {
        let detector = FineRecordingDetector()
        let stage = FaceStage(detector: detector, tracker: FaceTracker(),
                              service: FaceService(recognizer: try FaceRecognizer(store: nil)),
                              detectEvery: 1, limit: 10,
                              policy: FaceDetectionPolicy(maxRate: 10, idleRate: 2, fineEverySeconds: 0))
        for index in 0..<60 {
            var context = frame(index, level: 90, fps: 25)
            context.frame.image.bytes[0] = UInt8(index)
            try stage.process(&context)
            #expect(waitUntil { stage.detectionIdle })
        }
        let frames = detector.lock.withLock { detector.passes.map(\.frame) }
        // Four passes on the new picture (frames 0-3), then one due every 0.1 s
        // from frame 3 (0.12 s): each on the first frame at or after its time.
        #expect(frames == [0, 1, 2, 3, 6, 8, 11, 13, 16, 18, 21, 23, 26, 28, 31, 33, 36, 38, 41, 43,
                           46, 48, 51, 53, 56, 58])
    }
}

/// Finds one face at once and records each pass's frame (its first byte) and fine turn.
final class FineRecordingDetector: FaceDetector, @unchecked Sendable {
    // Guarded by `lock`: the worker thread writes, the test reads.
    let name = "fine-recorder"
    let lock = NSLock()
    var passes: [(frame: Int, fine: Int?)] = []
    func detect(in frame: ImageBuffer, gray: ImageBuffer?, limit: Int) throws -> [FaceObservation] {
        try detect(in: frame, gray: gray, limit: limit, hints: [], fine: nil)
    }
    func detect(in frame: ImageBuffer, gray: ImageBuffer?, limit: Int, hints: [FaceObservation], fine: Int?) throws
        -> [FaceObservation] {
        lock.withLock { passes.append((Int(frame.bytes[0]), fine)) }
        return [FaceObservation(box: PixelRect(x: 40, y: 30, w: 50, h: 60), score: 0.9)]
    }
}

/// Finds the same twelve faces at once on any frame.
final class CrowdFaceDetector: FaceDetector, @unchecked Sendable {
    let name = "crowd-fake"
    func detect(in frame: ImageBuffer, gray: ImageBuffer?, limit: Int) throws -> [FaceObservation] {
        (0..<12).map { (i: Int) -> FaceObservation in
            let x = Double(10 + (i % 4) * 75), y = Double(10 + (i / 4) * 75)
            return FaceObservation(box: PixelRect(x: x, y: y, w: 50, h: 50), score: 0.9)
        }
    }
}

@Suite struct FaceStageCrowdTests {
    @Test("a crowd's optical flow is budgeted: at most crowdFlowFacesPerFrame tracks are measured on a frame, and every track is measured in turn")
    func crowdFlowIsBudgeted() throws {
        let stage = FaceStage(detector: CrowdFaceDetector(), tracker: FaceTracker(),
                              service: FaceService(recognizer: try FaceRecognizer(store: nil)),
                              detectEvery: 1, limit: 20)
        // One textured picture (seeded noise), so flow finds every face standing still.
        let image = ImageBuffer(width: 320, height: 240, channels: 3)
        var seed: UInt64 = 7
        for i in 0..<image.byteCount {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            image.bytes[i] = UInt8(truncatingIfNeeded: seed >> 56)
        }
        var perFrame: [Int] = []
        var boxed = 0
        for index in 0..<90 {
            var context = FrameContext(frame: Frame(seq: UInt64(index + 1), capturedAt: Double(index) / 30,
                                                    capturedNanos: MonotonicClock.nanos(), image: image))
            let before = stage.flowMeasures
            try stage.process(&context)
            perFrame.append(stage.flowMeasures - before)
            boxed = max(boxed, context.detections.filter { $0.kind == .face }.count)
            #expect(waitUntil { stage.detectionIdle })  // the worker's pass on this frame ends before the next
        }
        #expect(boxed == 12)
        let budget = FaceDetectionPolicy().crowdFlowFacesPerFrame
        #expect(budget < 12)
        #expect(perFrame.allSatisfy { $0 <= budget }, "\(perFrame)")
        #expect(perFrame.contains(budget), "\(perFrame)")
        // Twelve tracks, `budget` a frame, those measured longest ago first:
        // the budget is spent on every frame, so each track is measured in turn.
        #expect(perFrame.suffix(30).reduce(0, +) == 30 * budget, "\(perFrame)")
    }
}

/// Finds twelve faces on any frame and records each pass's frame (its first
/// byte); with `churn`, one of them is somewhere new on every pass (a face
/// new to the tracker each time).
final class CrowdRecordingDetector: FaceDetector, @unchecked Sendable {
    // Guarded by `lock`: the worker thread writes, the test reads.
    let name = "crowd-recorder"
    let churn: Bool
    let faces: Int
    let lock = NSLock()
    var passes: [Int] = []
    init(churn: Bool, faces: Int = 12) {
        self.churn = churn
        self.faces = faces
    }
    func detect(in frame: ImageBuffer, gray: ImageBuffer?, limit: Int) throws -> [FaceObservation] {
        let pass = lock.withLock { passes.append(Int(frame.bytes[0])); return passes.count }
        return (0..<faces).map { (i: Int) -> FaceObservation in
            var x = Double(10 + (i % 4) * 75), y = Double(10 + (i / 4) * 75)
            if churn && i == faces - 1 { x = Double(10 + (pass % 2) * 225); y = 235 }
            return FaceObservation(box: PixelRect(x: x, y: y, w: 50, h: 50), score: 0.9)
        }
    }
}

@Suite struct FaceStageSettledCrowdTests {
    /// The frames (25 fps) the stage handed to `detector`'s passes.
    private func passFrames(_ detector: CrowdRecordingDetector, use: FaceUse = .live) throws -> [Int] {
        let stage = FaceStage(detector: detector, tracker: FaceTracker(),
                              service: FaceService(recognizer: try FaceRecognizer(store: nil)),
                              detectEvery: 1, limit: 20,
                              policy: FaceDetectionPolicy(maxRate: 10, idleRate: 2, fineEverySeconds: 0),
                              faceUse: { use }, opticalFlow: false)
        for index in 0..<60 {
            let image = ImageBuffer(width: 320, height: 300, channels: 3)
            image.bytes.update(repeating: 90, count: image.byteCount)
            image.bytes[0] = UInt8(index)
            var context = FrameContext(frame: Frame(seq: UInt64(index + 1), capturedAt: Double(index) / 25,
                                                    capturedNanos: MonotonicClock.nanos(), image: image))
            try stage.process(&context)
            #expect(waitUntil { stage.detectionIdle })
        }
        return detector.lock.withLock { detector.passes }
    }

    @Test("a crowd whose passes find the same faces is passed over at settledRate (5 a second); one that finds a new face on every pass keeps maxRate")
    func settledCrowdPassesAtItsOwnRate() throws {
        let settled = try passFrames(CrowdRecordingDetector(churn: false))
        let changing = try passFrames(CrowdRecordingDetector(churn: true))
        // From frame 20 (0.8 s) to 59: 1.6 s.
        let settledLate = settled.filter { $0 >= 20 }.count
        let changingLate = changing.filter { $0 >= 20 }.count
        #expect((7...9).contains(settledLate), "\(settled)")
        #expect((15...17).contains(changingLate), "\(changing)")
    }

    @Test("one settled face followed only for an event is passed over at idleRate (2 a second); seen live, or moving somewhere new on every pass, it keeps maxRate")
    func oneSettledFaceFollowedForAnEventPassesAtTheSettledRate() throws {
        let following = try passFrames(CrowdRecordingDetector(churn: false, faces: 1), use: .following)
        let live = try passFrames(CrowdRecordingDetector(churn: false, faces: 1), use: .live)
        let changing = try passFrames(CrowdRecordingDetector(churn: true, faces: 1), use: .following)
        #expect((3...4).contains(following.filter { $0 >= 20 }.count), "\(following)")
        #expect((15...17).contains(live.filter { $0 >= 20 }.count), "\(live)")
        #expect((15...17).contains(changing.filter { $0 >= 20 }.count), "\(changing)")
    }

    @Test("the policy: a settled crowd's interval, a crowd's fine passes further apart, fewer faces as before")
    func crowdPolicy() {
        let policy = FaceDetectionPolicy(maxRate: 10, idleRate: 2, fineEverySeconds: 1)
        #expect(!policy.isCrowd(tracked: 7))
        #expect(policy.isCrowd(tracked: 8))
        #expect(policy.interval(.active, settled: true) == 0.2)
        #expect(policy.interval(.active, settled: false) == 0.1)
        #expect(policy.interval(.still, settled: true) == 0.5)
        #expect(policy.interval(.active, settled: true, followedOnly: true) == 0.5)
        #expect(policy.interval(.active, settled: false, followedOnly: true) == 0.1)
        #expect(policy.fine(passesOnPicture: 40, secondsSinceFine: 1))
        #expect(!policy.fine(passesOnPicture: 40, secondsSinceFine: 1, crowd: true))
        #expect(policy.fine(passesOnPicture: 40, secondsSinceFine: 2, crowd: true))
        #expect(!policy.fine(passesOnPicture: 40, secondsSinceFine: 2, live: false))
        #expect(policy.fine(passesOnPicture: 40, secondsSinceFine: 3, live: false))
        #expect(policy.fine(passesOnPicture: 2, secondsSinceFine: 0, live: false), "a new picture's fine passes come at once")
        var never = policy
        never.crowdFaces = nil
        #expect(!never.isCrowd(tracked: 30))
    }
}
