import Foundation
import SightlineSupport

/// Runs a face detector beside the pipeline, on the newest frame it is
/// given, so a slow detection (Haar takes about a frame budget, more on a busy
/// machine) never holds up the pipeline. A frame offered while it is busy
/// waits in a one-frame slot, replacing any older one there, so the next
/// detection starts the moment the last ends (rather than on the next frame
/// to arrive): detections per second are 1 / detection time. Frames that are
/// replaced are not detected on; the tracker carries the boxes.
///
/// It is a lane of a `FaceDetectionThread` (`sightline.faces`): the one every
/// camera of a server shares (one detection budget: the lanes take turns, so
/// a busy camera cannot starve another's passes), or one of its own.
///
/// Threads: `offer` and `takeResult` are called by the pipeline thread; the
/// detector belongs to the detecting thread, which alone calls it.
/// `@unchecked Sendable` by that: `pending`, `result`, `failure`, `stopped`,
/// `running` and `previous` are read and written only while `condition` (an
/// NSCondition, a lock with waits: its thread's) is held, and `detector` only
/// on that thread.
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
        /// `offer`'s `analysed`, as it was handed over with this frame.
        public let analysed: AnalysedPicture?
        /// Where the pass's time went (reading its picture, then the
        /// detector's parts; a detector that times none counts as detection).
        public let profile: FacePassProfile
        /// Its number among the worker's passes.
        let pass: UInt64
    }

    /// The smaller copy of an offered frame that the other stages analyse,
    /// carried with the offer and back with its result, so the caller can
    /// move a full-frame pass's faces onto the copy that pass belongs to.
    public struct AnalysedPicture: Sendable {
        public let image: ImageBuffer
        public let gray: ImageBuffer?

        public init(image: ImageBuffer, gray: ImageBuffer?) {
            self.image = image
            self.gray = gray
        }
    }

    /// What a pass reads: a picture in hand, or a frame's picture read at
    /// most `longSide` pixels on its long side, made when the pass starts on
    /// the detecting thread (`FramePicture`: its BGR pixels, or a copy
    /// straight from its decoded form), so an offer replaced while it waited
    /// costs no conversion.
    public enum Input: Sendable {
        case image(ImageBuffer)
        case picture(FramePicture, longSide: Int)

        /// The picture the pass reads.
        func read() throws -> ImageBuffer {
            switch self {
            case .image(let image):
                return image
            case .picture(let picture, let longSide):
                guard let size = AnalysisSize(longSide: longSide).scaled(width: picture.width, height: picture.height)
                else { return picture.image }
                return try picture.scaled(width: size.width, height: size.height)
            }
        }
    }

    private let detector: FaceDetector
    private let limit: Int
    private let condition: NSCondition
    /// The thread it is a lane of.
    private let thread: FaceDetectionThread
    /// Whether that thread is its own (stopped with it).
    private let ownsThread: Bool
    private var pending: (image: Input, gray: ImageBuffer?, capturedAt: Double, hints: [FaceObservation], fine: Int?,
                          analysed: AnalysedPicture?, knownPass: UInt64, watchedLive: Bool)?
    private var result: Result?
    /// Results of frames taken before this time are dropped (`discardResults`).
    private var discardBefore = -Double.infinity
    private var failure: Error?
    private var stopped = false
    /// A detection is under way (guarded by `condition`).
    private var running = false
    /// The faces of the last pass, its frame's time and its number in `passes` (guarded by `condition`).
    private var previous: (faces: [FaceObservation], capturedAt: Double, pass: UInt64) = ([], -Double.infinity, 0)
    /// The newest pass whose result the pipeline has taken (guarded by `condition`):
    /// an offer made since carries that pass's faces among its hints.
    private var takenPass: UInt64 = 0

    /// Passes run for this worker (guarded by `condition`).
    private var passes: UInt64 = 0
    /// When its last pass ended, for the shared thread's turns (guarded by `condition`).
    var lastServedNanos: UInt64 = 0

    /// `shared`: run as a lane of that thread (every camera's detections on
    /// one thread, in turns); nil: on a thread of its own.
    public init(detector: FaceDetector, limit: Int, shared: FaceDetectionThread? = nil) {
        self.detector = detector
        self.limit = limit
        thread = shared ?? FaceDetectionThread()
        ownsThread = shared == nil
        condition = thread.condition
        thread.add(self)
    }

    deinit { stop() }

    /// Hands over a frame for the next detection, replacing one still
    /// waiting; false once stopped. The buffers are only read afterwards.
    /// `hints` are the tracked faces at the frame's time, `fine` asks for a
    /// pass that finds small and tilted faces too (see FaceDetector).
    /// `analysed` comes back with this frame's result, untouched.
    /// `watchedLive`: someone watches these faces live (`FaceDetector.pace`).
    @discardableResult
    public func offer(_ image: ImageBuffer, gray: ImageBuffer?, capturedAt: Double,
                      hints: [FaceObservation] = [], fine: Int? = nil, analysed: AnalysedPicture? = nil,
                      watchedLive: Bool = true) -> Bool {
        offer(.image(image), gray: gray, capturedAt: capturedAt, hints: hints, fine: fine, analysed: analysed,
              watchedLive: watchedLive)
    }

    @discardableResult
    public func offer(_ image: Input, gray: ImageBuffer?, capturedAt: Double,
                      hints: [FaceObservation] = [], fine: Int? = nil, analysed: AnalysedPicture? = nil,
                      watchedLive: Bool = true) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !stopped else { return false }
        pending = (image, gray, capturedAt, hints, fine, analysed, takenPass, watchedLive)
        condition.broadcast()  // the detecting thread (a shared one's lock has other waiters too)
        return true
    }

    /// Whether no detection is under way or waiting: an offer now starts at once.
    public var isIdle: Bool {
        condition.lock()
        defer { condition.unlock() }
        return pending == nil && !running
    }

    /// Whether a finished detection (or a failure) waits to be taken (for tests).
    package var hasResult: Bool {
        condition.lock()
        defer { condition.unlock() }
        return result != nil || failure != nil
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
        if let result { takenPass = max(takenPass, result.pass) }
        return result
    }

    /// Ends the worker and waits until its thread has left the detector (a
    /// detection under way finishes first): nothing may still be inside
    /// OpenCV when the process exits and its libraries are torn down.
    public func stop() {
        condition.lock()
        stopped = true
        pending = nil
        condition.broadcast()
        // Its pass under way (if any) ends first; a shared thread goes on for the others.
        while running { condition.wait() }
        condition.unlock()
        thread.remove(self)
        if ownsThread { thread.stop() }
    }

    /// Passes run so far (any thread).
    public var passCount: UInt64 {
        condition.lock()
        defer { condition.unlock() }
        return passes
    }

    /// A detection to run: the frame and what goes with it.
    struct Job {
        let image: Input
        let gray: ImageBuffer?
        let capturedAt: Double
        let hints: [FaceObservation]
        let fine: Int?
        let analysed: AnalysedPicture?
        let watchedLive: Bool
    }

    /// With `condition` held: whether a frame waits.
    var hasPending: Bool { pending != nil && !stopped }

    /// With `condition` held (the detecting thread): takes the waiting frame
    /// (`hasPending` must be true) and marks a pass under way.
    func takeJob() -> Job {
        let waiting = pending!
        pending = nil
        running = true
        // The tracked faces came with the offer, which may predate the last
        // pass's result (the frame waited while that pass ran): its faces
        // that no hint covers are added, so a face that pass found is looked
        // for again rather than missed (YuNet's confirming crops), unless the
        // picture was cut since. An offer made after the pipeline took that
        // result has them among its hints already, moved to its frame's
        // time: adding them again, where they were, put a second hint on a
        // moving face (a 1080p pan at 5 passes a second moves a face by half
        // its width between passes), and every pass paid a confirming crop
        // for it.
        let hints = previous.capturedAt < discardBefore || previous.pass <= waiting.knownPass ? waiting.hints
            : waiting.hints + previous.faces.filter { face in
                !waiting.hints.contains {
                    FaceGeometry.intersectionOverUnion($0.box, face.box) >= FaceGeometry.sameFaceOverlap
                }
            }
        return Job(image: waiting.image, gray: waiting.gray, capturedAt: waiting.capturedAt, hints: hints, fine: waiting.fine,
                   analysed: waiting.analysed, watchedLive: waiting.watchedLive)
    }

    /// What a pass found, in the picture it read, and where its time went.
    typealias Found = (faces: [FaceObservation], image: ImageBuffer, profile: FacePassProfile)

    /// The detecting thread, without the lock: runs the detector on `job`.
    func detect(_ job: Job) -> (outcome: Swift.Result<Found, Error>, seconds: Double) {
        let start = MonotonicClock.nanos()
        let outcome = Swift.Result { () throws -> Found in
            let image = try job.image.read()
            let read = MonotonicClock.nanos()
            detector.pace(watchedLive: job.watchedLive)
            let faces = try detector.detect(in: image, smaller: job.analysed?.image, gray: job.gray, limit: limit,
                                            hints: job.hints, fine: job.fine)
            var profile = detector.lastPassProfile
                ?? FacePassProfile(wholePass: Double(MonotonicClock.nanos() - read) / 1e9)
            profile.readSeconds = Double(read - start) / 1e9
            return (faces, image, profile)
        }
        return (outcome, Double(MonotonicClock.nanos() - start) / 1e9)
    }

    /// With `condition` held (the detecting thread): keeps what the pass found.
    func finish(_ job: Job, _ done: (outcome: Swift.Result<Found, Error>, seconds: Double)) {
        running = false
        passes += 1
        lastServedNanos = MonotonicClock.nanos()
        switch done.outcome {
        case .success where job.capturedAt < discardBefore:
            break  // its picture was cut away while it ran
        case .success(let found):
            previous = (found.faces, job.capturedAt, passes)
            result = Result(observations: found.faces, image: found.image, gray: job.gray,
                            capturedAt: job.capturedAt, seconds: done.seconds, fine: job.fine != nil,
                            analysed: job.analysed, profile: found.profile, pass: passes)
        case .failure(let error):
            failure = error
        }
        condition.broadcast()
    }
}
