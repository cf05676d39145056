import Foundation
import Logging
import Synchronization
import SightlineVision
import SightlineSupport
import SightlinePipeline
import SightlineHTTP

/// Every event's video: a clip per event from `preCapture` seconds before
/// its first frame to `postCapture` seconds after its last, written while
/// the event runs as fragmented MP4 (`VideoFileWriter`) to
/// `<data-dir>/events/<id>.mp4`, its SEI boxes included.
///
/// While it runs it holds the main H.264 rendition's encoder on
/// (`VideoFeed.holdEncoder`), whether or not anyone watches, and keeps the
/// last seconds of access units in a `PreCaptureRing`, so a clip can begin
/// before the event did. Overlapping events each get their own file
/// (decision: simple retention, a clip is wholly part of its event; the
/// cost is disk for the overlap). An event longer than `maxSeconds` has its
/// clip capped there (`capped`); the event goes on.
///
/// Threads: `enqueue` from the pipeline thread and the event recorder's
/// (event changes: the newest per event waits in a `Mutex`); everything
/// else on its own thread, `sightline.clips`, woken by every access unit the
/// feed publishes and at least every 250 ms. Nothing here runs on the
/// pipeline thread, and no file is touched anywhere else.
public final class ClipRecorder: Sendable {
    public struct Options: Sendable, Equatable {
        public var preCapture = 3.0
        public var postCapture = 3.0
        public var maxSeconds = 300.0
        /// How long after its thing appeared an event is announced (`events.minSeconds`): the ring keeps that much more.
        public var eventDelay = 0.5
        /// An ended event's clip is closed this long after the end was known even when no frames come.
        public var stallSeconds = 2.0
        public init() {}
    }

    /// `/api/state`'s `clips` and `/metrics`'s `sightline_clips_*`.
    public struct Status: Codable, Sendable, Equatable {
        /// "recording" (clips are written), "failing" (the last write failed; each new event tries again,
        /// and the first clip that opens brings it back).
        public var state = "recording"
        /// Clips being written now.
        public var active = 0
        /// Clips finished whole, and clips that stopped on a failed write.
        public var completed: UInt64 = 0
        public var failed: UInt64 = 0
        /// The last failure, in words without paths, until a clip completes again.
        public var lastError: String?
        /// Frames the recorder could not keep up with (skipped to the next keyframe).
        public var lostFrames: UInt64 = 0
        /// Seconds of video in the pre-capture ring and its size.
        public var preCaptureSeconds = 0.0
        public var preCaptureBytes = 0
        /// Seconds from an event's end (as the tracker called it) to its clip being complete, the last one.
        public var lastCompletedAfterEndSeconds: Double?
    }

    private struct Inbox {
        var order: [String] = []
        var records: [String: EventRecord] = [:]
        var closed = false
    }

    public let options: Options
    private let store: EventStore
    private let feed: VideoFeed
    private let logger: Logger
    private let inbox = Mutex(Inbox())
    private let status = Mutex(Status())
    private let wake: (id: UInt64, semaphore: DispatchSemaphore)
    private let finished = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)

    public init(store: EventStore, feed: VideoFeed, options: Options, logger: Logger) {
        self.store = store
        self.feed = feed
        self.options = options
        self.logger = logger
        wake = feed.wakeOnPublish()
    }

    /// Any thread, never waits: the newest state of each changed event.
    public func enqueue(_ batch: EventBatch) {
        guard !batch.changes.isEmpty else { return }
        let added = inbox.withLock { inbox -> Bool in
            guard !inbox.closed else { return false }
            for change in batch.changes {
                let id = change.after.id
                if inbox.records.updateValue(change.after, forKey: id) == nil { inbox.order.append(id) }
            }
            return true
        }
        if added { wake.semaphore.signal() }
    }

    public var snapshot: Status { status.withLock { $0 } }

    public func start() {
        started.store(true, ordering: .sequentiallyConsistent)
        feed.holdEncoder(.main)
        // From the units published after now, whenever the thread gets going.
        let from = feed.lastIndex(.main)
        let thread = Thread { [self] in
            Thread.setOSName("sightline.clips")
            var loop = ClipLoop(recorder: self, from: from)
            loop.run()
            finished.signal()
        }
        thread.name = "sightline.clips"
        thread.start()
    }

    /// After the events sink stopped (its final `end`s enqueued): closes
    /// every clip with what has been encoded, then ends the thread.
    public func stop() {
        inbox.withLock { $0.closed = true }
        wake.semaphore.signal()
        if started.load(ordering: .sequentiallyConsistent) {
            finished.wait()
            feed.releaseEncoder(.main)
        }
        feed.stopWaking(wake.id)
    }

    // MARK: - The thread's work

    /// The state of `sightline.clips`: the ring, the clips being written.
    private struct ClipLoop {
        struct Clip {
            var record: EventRecord
            var writer: VideoFileWriter
            /// When the tracker's end of the event reached this thread (monotonic).
            var endKnownNanos: UInt64?
            var lastReportNanos: UInt64 = 0
        }

        let recorder: ClipRecorder
        var ring: PreCaptureRing
        var clips: [String: Clip] = [:]
        /// Events whose clip is done (or was never possible), so a late update does not start another.
        var done: Set<String> = []
        var doneOrder: [String] = []
        var lastIndex: UInt64

        /// Events that came before any video (the encoder's first keyframe): tried again on every pass.
        var waiting: [String: (record: EventRecord, since: UInt64)] = [:]

        init(recorder: ClipRecorder, from index: UInt64) {
            self.recorder = recorder
            ring = PreCaptureRing(keepSeconds: recorder.options.preCapture + recorder.options.eventDelay + 1)
            lastIndex = index
        }

        mutating func run() {
            while true {
                _ = recorder.wake.semaphore.wait(timeout: .now() + 0.25)
                readFeed()
                let (records, closed) = recorder.inbox.withLock { inbox -> ([EventRecord], Bool) in
                    let records = inbox.order.compactMap { inbox.records[$0] }
                    inbox.order.removeAll()
                    inbox.records.removeAll()
                    return (records, inbox.closed)
                }
                for (_, entry) in waiting { observe(entry.record, since: entry.since) }
                for record in records { observe(record) }
                closeWhatIsDone(now: MonotonicClock.nanos())
                recorder.status.withLock {
                    $0.active = clips.count
                    $0.preCaptureSeconds = ring.span.rounded(toPlaces: 2)
                    $0.preCaptureBytes = ring.bytes
                }
                if closed {
                    readFeed()
                    for id in Array(clips.keys) { close(id, because: nil) }
                    break
                }
            }
        }

        /// New access units: into the ring and every open clip.
        mutating func readFeed() {
            let (units, lost) = recorder.feed.units(.main, after: lastIndex)
            if lost, let first = units.first {
                recorder.status.withLock { $0.lostFrames += first.index - lastIndex - 1 }
                ring.reset()
            }
            for unit in units {
                lastIndex = unit.index
                ring.append(unit)
                for id in Array(clips.keys) {
                    do {
                        try clips[id]!.writer.append(unit)
                    } catch VideoFileWriter.Failure.newParameterSets {
                        close(id, because: .pictureChanged)   // a new source or size: the clip ends whole here
                        continue
                    } catch {
                        fail(id, error)
                        continue
                    }
                    if unit.capturedAt - clips[id]!.writer.start >= recorder.options.maxSeconds {
                        close(id, because: .capped)
                    }
                }
            }
        }

        mutating func observe(_ record: EventRecord, since: UInt64 = MonotonicClock.nanos()) {
            if var clip = clips[record.id] {
                if clip.endKnownNanos == nil && record.endTime != nil { clip.endKnownNanos = MonotonicClock.nanos() }
                clip.record = record
                clips[record.id] = clip
                return
            }
            guard !done.contains(record.id) else { return }
            let since = waiting[record.id]?.since ?? since
            guard let first = ring.startIndex(forEventAt: record.startTime, preCapture: recorder.options.preCapture),
                  let size = recorder.feed.renditions().first(where: { $0.rendition == .main }),
                  let width = size.width, let height = size.height else {
                // No video yet: wait for it, as long as the clip could still hold something of the event.
                let waited = Double(MonotonicClock.nanos() &- since) / 1e9
                if waited < recorder.options.postCapture + recorder.options.stallSeconds + 10 {
                    waiting[record.id] = (record, since)
                } else {
                    waiting[record.id] = nil
                    markDone(record.id)
                    recorder.logger.warning("clips: no video for event \(record.id) (the encoder made none)")
                }
                return
            }
            waiting[record.id] = nil
            markDone(record.id)   // one attempt per event
            let path = recorder.store.clipPath(record.id)
            do {
                let writer = try VideoFileWriter(path: path, first: ring.units[first], width: width, height: height)
                for unit in ring.units[(first + 1)...] { try writer.append(unit) }
                var clip = Clip(record: record, writer: writer)
                if record.endTime != nil { clip.endKnownNanos = MonotonicClock.nanos() }
                clips[record.id] = clip
                report(record.id, persist: true)
                guard clips[record.id] != nil else { return }
                let recovered = recorder.status.withLock { status -> Bool in
                    status.state = "recording"
                    defer { status.lastError = nil }
                    return status.lastError != nil
                }
                if recovered { recorder.logger.notice("clips: writing works again") }
            } catch {
                unlink(path)
                failed(record.id, error)
            }
        }

        /// Ended clips close once post-capture after the event's last sighting
        /// is written, or `stallSeconds` after that when no frames come.
        mutating func closeWhatIsDone(now: UInt64) {
            for (id, clip) in clips {
                if let endKnown = clip.endKnownNanos {
                    let lastTime = clip.record.endTime ?? clip.record.lastTime
                    let reached = clip.writer.lastCapturedAt >= lastTime + recorder.options.postCapture
                    let waited = Double(now &- endKnown) / 1e9
                    if reached || waited >= recorder.options.postCapture + recorder.options.stallSeconds {
                        close(id, because: nil)
                        recorder.status.withLock { $0.lastCompletedAfterEndSeconds = waited.rounded(toPlaces: 3) }
                        continue
                    }
                }
                if now &- clip.lastReportNanos >= 1_000_000_000 { report(id, persist: false) }
            }
        }

        enum Reason { case capped, pictureChanged }

        mutating func close(_ id: String, because reason: Reason?) {
            guard let clip = clips.removeValue(forKey: id) else { return }
            do {
                try clip.writer.finish()
            } catch {
                var info = info(clip)
                info.error = "\(error)"
                _ = try? recorder.store.updateClip(id, info, persist: true)
                failed(id, error)
                return
            }
            var info = info(clip)
            info.complete = true
            if reason == .capped { info.capped = true }
            if reason == .pictureChanged { info.error = "ends early: the picture size or the source changed" }
            do {
                guard try recorder.store.updateClip(id, info, persist: true) else {
                    unlink(clip.writer.path)
                    return
                }
            } catch {
                failed(id, error)
                return
            }
            recorder.status.withLock { $0.completed += 1 }
        }

        /// A write failed: the file keeps what it has (marked incomplete; on a
        /// full disk the record says so once it can be written), the clip stops.
        /// A file with nothing in it goes, and so does the event's `clip`.
        mutating func fail(_ id: String, _ error: Error) {
            guard let clip = clips.removeValue(forKey: id) else { return }
            try? clip.writer.finish()
            var info = info(clip)
            info.error = "\(error)"
            if info.frames == 0 {
                unlink(clip.writer.path)
                recorder.store.removeClip(id)
            } else {
                do {
                    // Kept in the index even when the record cannot be written now.
                    if try !recorder.store.updateClip(id, info, persist: true) { unlink(clip.writer.path) }
                } catch {}
            }
            failed(id, error)
        }

        /// The event is gone: its clip is not wanted.
        mutating func abandon(_ id: String) {
            guard let clip = clips.removeValue(forKey: id) else { return }
            try? clip.writer.finish()
            unlink(clip.writer.path)
        }

        func failed(_ id: String, _ error: Error) {
            let message = VideoFileWriter.storageError(error).map { $0.message("cannot write the clip") }
                ?? "cannot write the clip: \(error)"
            let first = recorder.status.withLock { status -> Bool in
                status.failed += 1
                status.state = "failing"
                defer { status.lastError = message }
                return status.lastError == nil
            }
            if first { recorder.logger.error("clips: \(message)", metadata: ["event": "\(id)"]) }
        }

        func info(_ clip: Clip) -> ClipInfo {
            ClipInfo(start: clip.writer.start, duration: clip.writer.duration.rounded(toPlaces: 3),
                     bytes: clip.writer.bytes, frames: clip.writer.frames)
        }

        mutating func report(_ id: String, persist: Bool) {
            guard let clip = clips[id] else { return }
            clips[id]!.lastReportNanos = MonotonicClock.nanos()
            do {
                if try !recorder.store.updateClip(id, info(clip), persist: persist) { abandon(id) }
            } catch {
                fail(id, error)
            }
        }

        mutating func markDone(_ id: String) {
            guard done.insert(id).inserted else { return }
            doneOrder.append(id)
            if doneOrder.count > 4096 { done.remove(doneOrder.removeFirst()) }
        }
    }
}
