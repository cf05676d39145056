import Foundation

/// Runs a face detector on its own thread, on the newest frame it is given,
/// so a slow detection (Haar takes about a frame budget, more on a busy
/// machine) never holds up the pipeline. A frame offered while it is busy
/// waits in a one-frame slot, replacing any older one there, so the next
/// detection starts the moment the last ends (rather than on the next frame
/// to arrive): detections per second are 1 / detection time. Frames that are
/// replaced are not detected on; the tracker carries the boxes.
///
/// Threads: `offer` and `takeResult` are called by the pipeline thread; the
/// detector belongs to the worker thread (`sightline.faces`), which alone
/// calls it. `@unchecked Sendable` by that: `pending`, `result`, `failure`
/// and `stopped` are read and written only while `condition` (an
/// NSCondition, a lock with waits) is held, and `detector` only on the worker.
public final class FaceDetectionWorker: @unchecked Sendable {
    public struct Result: Sendable {
        public let observations: [FaceObservation]
        /// The frame they were found in (their landmarks refer to it).
        public let image: ImageBuffer
        public let gray: ImageBuffer?
        public let capturedAt: Double
        public let seconds: Double
        /// Whether it was a fine pass (`offer`'s `fine`).
        public let fine: Bool
    }

    private let detector: FaceDetector
    private let limit: Int
    private let condition = NSCondition()
    private var pending: (image: ImageBuffer, gray: ImageBuffer?, capturedAt: Double, hints: [FaceObservation], fine: Int?)?
    private var result: Result?
    /// Results of frames taken before this time are dropped (`discardResults`).
    private var discardBefore = -Double.infinity
    private var failure: Error?
    private var stopped = false
    /// Set once the thread has left its loop (guarded by `condition`).
    private var exited = false
    /// A detection is under way (guarded by `condition`).
    private var running = false
    /// The faces of the last pass and its frame's time (guarded by `condition`).
    private var previous: (faces: [FaceObservation], capturedAt: Double) = ([], -Double.infinity)

    public init(detector: FaceDetector, limit: Int) {
        self.detector = detector
        self.limit = limit
        let thread = Thread { [self] in
            Thread.setOSName("sightline.faces")
            BackgroundPriority.lowerCurrentThread(by: BackgroundPriority.faceNiceness)
            run()
        }
        thread.name = "sightline.faces"
        thread.start()
    }

    deinit { stop() }

    /// Hands over a frame for the next detection, replacing one still
    /// waiting; false once stopped. The buffers are only read afterwards.
    /// `hints` are the tracked faces at the frame's time, `fine` asks for a
    /// pass that finds small and tilted faces too (see FaceDetector).
    @discardableResult
    public func offer(_ image: ImageBuffer, gray: ImageBuffer?, capturedAt: Double,
                      hints: [FaceObservation] = [], fine: Int? = nil) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !stopped else { return false }
        pending = (image, gray, capturedAt, hints, fine)
        condition.signal()
        return true
    }

    /// Whether no detection is under way or waiting: an offer now starts at once.
    public var isIdle: Bool {
        condition.lock()
        defer { condition.unlock() }
        return pending == nil && !running
    }

    /// Drops the finished detection and any under way or waiting whose frame
    /// was taken before `capturedAt` (the picture was cut since).
    public func discardResults(before capturedAt: Double) {
        condition.lock()
        defer { condition.unlock() }
        discardBefore = max(discardBefore, capturedAt)
        if let waiting = result, waiting.capturedAt < capturedAt { result = nil }
        if let queued = pending, queued.capturedAt < capturedAt { pending = nil }
    }

    /// The newest finished detection, once; throws what the detector threw.
    public func takeResult() throws -> Result? {
        condition.lock()
        defer { condition.unlock() }
        if let failure {
            self.failure = nil
            throw failure
        }
        defer { result = nil }
        return result
    }

    /// Ends the worker and waits until its thread has left the detector (a
    /// detection under way finishes first): nothing may still be inside
    /// OpenCV when the process exits and its libraries are torn down.
    public func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        while !exited { condition.wait() }
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while pending == nil && !stopped { condition.wait() }
            if stopped {
                exited = true
                condition.broadcast()
                condition.unlock()
                return
            }
            let job = pending!
            pending = nil
            running = true
            // The tracked faces came with the offer, which may predate the
            // last pass's result (the frame waited while that pass ran): its
            // faces that no hint covers are added, so a face that pass found
            // is looked for again rather than missed (YuNet's confirming
            // crops), unless the picture was cut since.
            let hints = previous.capturedAt < discardBefore ? job.hints
                : job.hints + previous.faces.filter { face in
                    !job.hints.contains {
                        FaceGeometry.intersectionOverUnion($0.box, face.box) >= FaceGeometry.sameFaceOverlap
                    }
                }
            condition.unlock()

            let start = MonotonicClock.nanos()
            let outcome = Swift.Result {
                try detector.detect(in: job.image, gray: job.gray, limit: limit, hints: hints, fine: job.fine)
            }
            let seconds = Double(MonotonicClock.nanos() - start) / 1e9

            condition.lock()
            running = false
            switch outcome {
            case .success where job.capturedAt < discardBefore:
                break  // its picture was cut away while it ran
            case .success(let observations):
                previous = (observations, job.capturedAt)
                result = Result(observations: observations, image: job.image, gray: job.gray,
                                capturedAt: job.capturedAt, seconds: seconds, fine: job.fine != nil)
            case .failure(let error):
                failure = error
            }
            condition.broadcast()
            condition.unlock()
        }
    }
}
