import Foundation
import Synchronization
import Testing
@testable import SightlineSupport
@testable import SightlineVision
import SightlineTesting

/// Which detectors ran, in order (the detection thread writes, the test reads).
final class CallLog: Sendable {
    private let names = Locked<[String]>([])
    func append(_ name: String) { names.withLock { $0.append(name) } }
    var all: [String] { names.withLock { $0 } }
}

/// A detector that logs which camera it ran for and, while `gate` is shut,
/// holds its pass until the test opens it.
final class GatedDetector: FaceDetector, Sendable {
    let name: String
    let log: CallLog
    let gate = DispatchSemaphore(value: 0)
    let gated: Atomic<Bool>

    init(name: String, log: CallLog, gated: Bool) {
        self.name = name
        self.log = log
        self.gated = Atomic(gated)
    }

    func detect(in frame: ImageBuffer, gray: ImageBuffer?, limit: Int) throws -> [FaceObservation] {
        log.append(name)
        if gated.load(ordering: .relaxed) { gate.wait() }
        return []
    }
}

/// Waits (bounded) until `condition` holds; for a thread to get somewhere, not for time to pass.
private func eventually(_ condition: () -> Bool) -> Bool {
    waitUntil(seconds: 10, condition)
}

@Suite("One face detection thread for every camera")
struct FaceDetectionThreadTests {
    @Test("lanes take turns: a camera that always has a frame waiting does not keep another's from its pass")
    func lanesTakeTurns() throws {
        let log = CallLog()
        let thread = FaceDetectionThread()
        defer { thread.stop() }
        let busy = GatedDetector(name: "busy", log: log, gated: true)
        let quiet = GatedDetector(name: "quiet", log: log, gated: false)
        let busyLane = FaceDetectionWorker(detector: busy, limit: 1, shared: thread)
        let quietLane = FaceDetectionWorker(detector: quiet, limit: 1, shared: thread)
        #expect(thread.laneCount == 2)
        let frame = ImageBuffer(width: 8, height: 8, channels: 3)
        // The busy camera's first pass runs (and is held); then both have a frame waiting.
        #expect(busyLane.offer(frame, gray: nil, capturedAt: 1))
        #expect(eventually { log.all == ["busy"] })
        #expect(busyLane.offer(frame, gray: nil, capturedAt: 2))
        #expect(quietLane.offer(frame, gray: nil, capturedAt: 2))
        busy.gated.store(false, ordering: .relaxed)
        busy.gate.signal()
        // The quiet camera, never served, goes before the busy one's second frame.
        #expect(eventually { log.all.count == 3 })
        #expect(log.all == ["busy", "quiet", "busy"])
        #expect(eventually { quietLane.passCount == 1 && busyLane.passCount == 2 })
        #expect(try quietLane.takeResult()?.capturedAt == 2)
        quietLane.stop()
        busyLane.stop()
        #expect(thread.laneCount == 0)
    }

    @Test("each result comes back with its own frame's analysed copy, however many offers replaced each other while it ran")
    func resultsKeepTheirAnalysedCopy() throws {
        let log = CallLog()
        let detector = GatedDetector(name: "one", log: log, gated: true)
        let worker = FaceDetectionWorker(detector: detector, limit: 1)
        defer { worker.stop() }
        let frame = ImageBuffer(width: 64, height: 36, channels: 3)
        func copy(_ width: Int) -> FaceDetectionWorker.AnalysedPicture {
            .init(image: ImageBuffer(width: width, height: 4, channels: 3), gray: nil)
        }
        #expect(worker.offer(frame, gray: nil, capturedAt: 1, analysed: copy(11)))
        #expect(eventually { log.all.count == 1 })
        // Under load: five more offers while the first pass runs, each replacing the one waiting.
        for n in 2...6 { #expect(worker.offer(frame, gray: nil, capturedAt: Double(n), analysed: copy(10 + n))) }
        // The first pass ends; the second (the last offer) starts and is held until its result is wanted.
        detector.gate.signal()
        #expect(eventually { worker.hasResult && log.all.count == 2 })
        let first = try #require(try worker.takeResult())
        #expect(first.capturedAt == 1 && first.analysed?.image.width == 11)
        detector.gated.store(false, ordering: .relaxed)
        detector.gate.signal()
        #expect(eventually { worker.hasResult })
        let last = try #require(try worker.takeResult())
        #expect(last.capturedAt == 6 && last.analysed?.image.width == 16)
    }

    @Test("a lane that stops while its pass runs waits for it; the thread goes on for the others")
    func aLaneStopsAlone() throws {
        let log = CallLog()
        let thread = FaceDetectionThread()
        defer { thread.stop() }
        let first = GatedDetector(name: "first", log: log, gated: true)
        let second = GatedDetector(name: "second", log: log, gated: false)
        let firstLane = FaceDetectionWorker(detector: first, limit: 1, shared: thread)
        let secondLane = FaceDetectionWorker(detector: second, limit: 1, shared: thread)
        let frame = ImageBuffer(width: 8, height: 8, channels: 3)
        #expect(firstLane.offer(frame, gray: nil, capturedAt: 1))
        #expect(eventually { log.all == ["first"] })
        let stopped = Atomic<Bool>(false)
        let stopper = Thread {
            firstLane.stop()
            stopped.store(true, ordering: .relaxed)
        }
        stopper.start()
        first.gated.store(false, ordering: .relaxed)
        first.gate.signal()
        #expect(eventually { stopped.load(ordering: .relaxed) })
        #expect(!firstLane.offer(frame, gray: nil, capturedAt: 2), "a stopped lane takes no frame")
        #expect(secondLane.offer(frame, gray: nil, capturedAt: 3))
        #expect(eventually { secondLane.passCount == 1 })
        #expect(log.all == ["first", "second"])
        secondLane.stop()
    }
}
