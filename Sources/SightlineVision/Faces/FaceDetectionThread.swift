import Foundation
import SightlineSupport

/// One thread (`sightline.faces`) that runs every camera's face detections (or one
/// worker's alone, when it has a thread of its own):
/// each camera's `FaceDetectionWorker` is a lane of it, with its own
/// one-frame slot, result and detector state. When several lanes have a
/// frame waiting, the one served longest ago goes next, so the cameras share
/// one detection budget in turns: a camera whose scene is busy gets no more
/// than its turn, and each camera's pass rate is what its own policy asks
/// for while the thread keeps up, and an equal share of the thread when it
/// does not. Frames are never held up: the pipelines only offer and take.
///
/// Threads: `condition` guards the lanes list and every lane's state (the
/// lanes use it as their own lock); the detectors run on this thread only,
/// outside the lock. `@unchecked Sendable` by that.
public final class FaceDetectionThread: @unchecked Sendable {
    /// Every lane's lock and wake-up.
    let condition = NSCondition()
    /// Guarded by `condition`.
    private var lanes: [FaceDetectionWorker] = []
    private var stopped = false
    private var exited = false

    public init() {
        let thread = Thread { [self] in
            Thread.setOSName("sightline.faces")
            BackgroundPriority.lowerCurrentThread(by: BackgroundPriority.faceNiceness)
            run()
        }
        thread.name = "sightline.faces"
        thread.start()
    }

    deinit { stop() }

    /// Lanes now (any thread).
    public var laneCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return lanes.count
    }

    /// A worker's init: it is a lane from now on.
    func add(_ lane: FaceDetectionWorker) {
        condition.lock()
        lanes.append(lane)
        condition.unlock()
    }

    /// A lane's `stop`, after its pass under way ended.
    func remove(_ lane: FaceDetectionWorker) {
        condition.lock()
        lanes.removeAll { $0 === lane }
        condition.unlock()
    }

    /// Ends the thread once the pass under way (if any) is done. Main
    /// thread, after every camera stopped; nothing is inside a detector (and
    /// so inside OpenCV) after it returns.
    public func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        while !exited { condition.wait() }
        condition.unlock()
    }

    /// With `condition` held: the lane to serve next, the one served longest ago among those with a frame waiting.
    private func nextLane() -> FaceDetectionWorker? {
        lanes.filter(\.hasPending).min { $0.lastServedNanos < $1.lastServedNanos }
    }

    private func run() {
        while true {
            condition.lock()
            var lane = nextLane()
            while lane == nil && !stopped {
                condition.wait()
                lane = nextLane()
            }
            guard let lane, !stopped else {
                exited = true
                condition.broadcast()
                condition.unlock()
                return
            }
            let job = lane.takeJob()
            condition.unlock()
            let done = lane.detect(job)
            condition.lock()
            lane.finish(job, done)
            condition.unlock()
        }
    }
}
