import Foundation
import Synchronization
import SightlineSupport

/// Runs the slow HTTP handlers (decode, encode, training, disk, device
/// probes) off the libwebsockets service thread, one at a time, from a
/// bounded queue: when `capacity` jobs wait, `submit` refuses and the caller
/// answers 503 with Retry-After. A finished job's answer goes to `deliver`
/// on the worker thread (which hands it to the service thread and wakes it).
///
/// Threads: `submit` from the service thread; jobs on `sightline.requests`.
/// The queue is in a `Mutex`; the semaphore counts jobs waiting.
public final class RequestWorker: Sendable {
    public struct Job: Sendable {
        public let run: @Sendable () -> HTTPResponse
        public let deliver: @Sendable (HTTPResponse) -> Void
    }

    public let capacity: Int
    private let queue = Locked((jobs: [Job](), stopped: false))
    private let waiting = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)

    public init(capacity: Int = 16) {
        self.capacity = capacity
    }

    public func start() {
        started.store(true, ordering: .sequentiallyConsistent)
        let thread = Thread { [self] in
            Thread.setOSName("sightline.requests")
            BackgroundPriority.lowerCurrentThread()
            loop: while true {
                waiting.wait()
                switch runNext() {
                case .none: continue
                case .some(.none): break loop
                case .some(.some(let done)): done.deliver(done.response)
                }
            }
            finished.signal()
        }
        thread.name = "sightline.requests"
        thread.start()
    }

    /// Runs the next job: nil when none waits, .some(nil) when stopped. The
    /// answer is delivered by the caller, after this returns, so the job and
    /// the request it holds are gone before the client can see the answer
    /// (a finished exchange holds no request body in memory).
    private func runNext() -> (response: HTTPResponse, deliver: @Sendable (HTTPResponse) -> Void)?? {
        let next = queue.withLock { state -> Job?? in
            if state.stopped && state.jobs.isEmpty { return .some(nil) }
            return state.jobs.isEmpty ? nil : state.jobs.removeFirst()
        }
        guard let next else { return nil }
        guard let job = next else { return .some(nil) }
        return (job.run(), job.deliver)
    }

    /// Jobs waiting (not counting the one running).
    public var queued: Int { queue.withLock { $0.jobs.count } }

    /// Queues a job; false when the queue is full or the worker stopped.
    public func submit(_ job: Job) -> Bool {
        let accepted = queue.withLock { state -> Bool in
            guard !state.stopped, state.jobs.count < capacity else { return false }
            state.jobs.append(job)
            return true
        }
        if accepted { waiting.signal() }
        return accepted
    }

    /// Finishes the queued jobs, then ends the thread (their answers are delivered as usual).
    public func stop() {
        let wasRunning = queue.withLock { state -> Bool in
            defer { state.stopped = true }
            return !state.stopped
        }
        guard wasRunning, started.load(ordering: .sequentiallyConsistent) else { return }
        waiting.signal()
        finished.wait()
    }

    /// The answer when the queue is full.
    public static var busy: HTTPResponse {
        var response = HTTPResponse.error(503, "busy", detail: "too many slow requests are waiting; try again in a second")
        response.headers.append(("retry-after:", "1"))
        return response
    }
}
