import Foundation
import Logging
import Synchronization
import SightlineSupport
import SightlinePipeline

/// Writes events to the `EventStore` on a thread of its own
/// (`sightline.events`), so a slow or stalled disk never slows the pipeline.
///
/// `enqueue` never waits: it keeps the newest state of each event waiting to
/// be written (one entry per event, with the newest best frame when it
/// changed), so intermediate states coalesce and nothing is lost but them.
/// At most `capacity` events wait; beyond that the oldest waiting one is
/// dropped and counted. The thread writes the snapshot (the best frame's
/// full-size JPEG: made here unless another consumer made it, or an MJPEG
/// source's own), makes the crop (decode once, cut, encode), writes the
/// record, then applies retention.
///
/// Threads: `enqueue` from the pipeline thread (and the thread stopping the
/// sink); the waiting events are in a `Mutex`, the semaphore only wakes the
/// thread. About every 250 ms the thread calls `tick` and writes what it
/// returns (events whose thing has gone while no frames come).
public final class EventRecorder: Sendable {
    public struct Counts: Codable, Sendable, Equatable {
        /// Event states written.
        public var saved: UInt64 = 0
        /// Waiting event states dropped because `capacity` were waiting.
        public var dropped: UInt64 = 0
        /// Writes that failed (disk full, permissions); the last error is
        /// kept, in words without paths, until a write works again.
        public var failed: UInt64 = 0
        public var waiting = 0
        public var lastError: String?
    }

    private struct Pending {
        var record: EventRecord
        var best: FrameJPEG?
    }

    private struct State {
        var order: [String] = []
        var items: [String: Pending] = [:]
        var closed = false
        var counts = Counts()
    }

    public let capacity: Int
    public let store: EventStore
    private let state = Locked(State())
    private let ready = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)
    private let tick: @Sendable () -> EventBatch
    private let logger: Logger
    private let storageFailures: StorageFailureReporter
    /// Retention by age runs at least this often even when nothing is written.
    private let retentionInterval: Double = 60

    public init(store: EventStore, capacity: Int = 256, logger: Logger,
                storageFailures: StorageFailureReporter = StorageFailureReporter(),
                tick: @escaping @Sendable () -> EventBatch = { EventBatch() }) {
        self.store = store
        self.capacity = max(1, capacity)
        self.logger = logger
        self.storageFailures = storageFailures
        self.tick = tick
    }

    /// Any thread, never waits.
    public func enqueue(_ batch: EventBatch) {
        guard !batch.changes.isEmpty else { return }
        let wake = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            let wasEmpty = state.items.isEmpty
            for change in batch.changes {
                let id = change.after.id
                if var pending = state.items[id] {
                    pending.record = change.after
                    if change.bestChanged { pending.best = change.best }
                    state.items[id] = pending
                } else {
                    state.items[id] = Pending(record: change.after, best: change.bestChanged ? change.best : nil)
                    state.order.append(id)
                }
            }
            while state.items.count > capacity, !state.order.isEmpty {
                state.items.removeValue(forKey: state.order.removeFirst())
                state.counts.dropped += 1
            }
            return wasEmpty
        }
        if wake { ready.signal() }
    }

    public var counts: Counts {
        state.withLock { state in
            var counts = state.counts
            counts.waiting = state.items.count
            return counts
        }
    }

    public func start() {
        started.store(true, ordering: .sequentiallyConsistent)
        let thread = Thread { [self] in
            Thread.setOSName("sightline.events")
            BackgroundPriority.lowerCurrentThread()
            let cropper: EventCropper?
            do {
                cropper = try EventCropper()
            } catch {
                logger.error("events: no crops (TurboJPEG failed to start)", metadata: ["error": "\(error)"])
                cropper = nil
            }
            var lastRetention = MonotonicClock.nanos()
            while true {
                _ = ready.wait(timeout: .now() + 0.25)
                enqueue(tick())
                let (work, closed) = state.withLock { state -> ([Pending], Bool) in
                    let work = state.order.compactMap { state.items[$0] }
                    state.order.removeAll()
                    state.items.removeAll()
                    return (work, state.closed)
                }
                for pending in work { write(pending, cropper: cropper) }
                if !work.isEmpty || Double(MonotonicClock.nanos() - lastRetention) / 1e9 > retentionInterval {
                    let expired = store.enforceRetention()
                    if !expired.isEmpty { logger.debug("events: retention deleted \(expired.count)") }
                    lastRetention = MonotonicClock.nanos()
                }
                if closed && work.isEmpty { break }
            }
            finished.signal()
        }
        thread.name = "sightline.events"
        thread.start()
    }

    /// Writes what is waiting, then ends the thread (the caller enqueues the final `end`s first).
    public func stop() {
        state.withLock { $0.closed = true }
        ready.signal()
        if started.load(ordering: .sequentiallyConsistent) { finished.wait() }
    }

    private func write(_ pending: Pending, cropper: EventCropper?) {
        var jpeg: Data?
        do {
            jpeg = try pending.best?.make(.full)
        } catch {
            logger.warning("events: cannot encode the snapshot", metadata: ["event": "\(pending.record.id)", "error": "\(error)"])
        }
        var crop: Data?
        if let jpeg, let cropper {
            do {
                crop = try cropper.crop(jpeg, box: pending.record.best.box)
            } catch {
                logger.warning("events: cannot crop", metadata: ["event": "\(pending.record.id)", "error": "\(error)"])
            }
        }
        do {
            let saved = try store.save(pending.record, snapshot: jpeg, crop: crop)
            let recovered = state.withLock { state -> Bool in
                if saved { state.counts.saved += 1 }
                defer { state.counts.lastError = nil }
                return state.counts.lastError != nil
            }
            if recovered { logger.notice("events: saving works again") }
        } catch {
            // Logged once while writes keep failing (a full disk fails every event), counted each time.
            let action = "cannot save the event"
            let message = storageFailures.report(error, area: .events, action: action, log: false)
                .map { $0.message(action) } ?? "\(action): \(error)"
            let first = state.withLock { state -> Bool in
                state.counts.failed += 1
                defer { state.counts.lastError = message }
                return state.counts.lastError == nil
            }
            if first { logger.error("events: \(message)") }
        }
    }
}
