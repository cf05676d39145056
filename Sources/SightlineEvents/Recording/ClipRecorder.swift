import Foundation
import Logging
import Synchronization
import SightlineVision
import SightlineSupport
import SightlinePipeline

/// Every event's video: a clip per event from `preCapture` seconds before
/// its first frame to `postCapture` seconds after its last, written while
/// the event runs as fragmented MP4 (`VideoFileWriter`) to
/// `<data-dir>/events/<id>.mp4`, its SEI boxes included.
///
/// While it runs it holds the main H.264 rendition (`VideoFeed.holdEncoder`)
/// whether or not anyone watches, and keeps the last seconds of access units
/// in a `PreCaptureRing`, so a clip can begin before the event did. The hold
/// costs nothing for a source whose own H.264 is passed on; for an MJPEG
/// source the H.264 sink keeps the source's JPEGs between events instead of
/// encoding them, and encodes them once a clip wants video (`wantLive`);
/// other sources are encoded as they come. Overlapping events share one file: an event that
/// begins while a clip is written, with at least `joinSeconds` left before
/// that clip's cap, joins it, and its `<id>.mp4` is a hard link to the same
/// file (a crowd's faces, each an event, are one video on disk rather than
/// one each; the file is freed when the last event holding it is deleted).
/// Its clip then starts before its own pre-capture (`clip.start` says
/// where) and ends when the last of the events holding it has had its
/// post-capture. Where the data directory cannot hard-link, an event gets
/// a file of its own. A clip longer than `maxSeconds` is capped there
/// (`capped`); its events go on.
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
        /// An event joins the clip being written when that clip has at least this long left before its cap
        /// (nil: half of `maxSeconds`); otherwise it starts a clip of its own, which later events join.
        public var joinSeconds: Double?
        public init() {}
    }

    /// `/api/state`'s `clips` and `/metrics`'s `sightline_clips_*`.
    public struct Status: Codable, Sendable, Equatable {
        /// "recording" (clips are written), "failing" (the last write failed; each new event tries again,
        /// and the first clip that opens brings it back).
        public var state = "recording"
        /// Events whose clip is being written now.
        public var active = 0
        /// Files being written now (overlapping events share one).
        public var files = 0
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
    private let inbox = Locked(Inbox())
    private let status = Locked(Status())
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

    /// Seconds of video a clip may need from before its event was announced: what the
    /// ring keeps, and what the H.264 sink keeps unencoded between events where it can
    /// (an MJPEG source's own JPEGs, encoded once an event begins: `wantLive`).
    var keepSeconds: Double { options.preCapture + options.eventDelay + 1 }

    public func start() {
        started.store(true, ordering: .sequentiallyConsistent)
        feed.holdEncoder(.main, deferringUpTo: keepSeconds)
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
            feed.releaseEncoder(.main, deferringUpTo: keepSeconds)
        }
        feed.stopWaking(wake.id)
    }

    // MARK: - The thread's work

    /// The state of `sightline.clips`: the ring, the files being written and
    /// the events each one holds.
    private struct ClipLoop {
        /// An event held by a file being written.
        struct Member {
            var record: EventRecord
            /// When the tracker's end of the event reached this thread (monotonic).
            var endKnownNanos: UInt64?
            var lastReportNanos: UInt64 = 0
        }

        /// One file being written, and the events whose clip it is (each a hard link to it, `<id>.mp4`).
        struct Recording {
            var writer: VideoFileWriter
            var members: [String: Member]
            /// A name of the file that still exists (the writer's, until its event is deleted).
            var path: String
        }

        let recorder: ClipRecorder
        var ring: PreCaptureRing
        /// Oldest first; new events join the last one when it has time left.
        var recordings: [Recording] = []
        /// Events whose clip is done (or was never possible), so a late update does not start another.
        var done: Set<String> = []
        var doneOrder: [String] = []
        var lastIndex: UInt64
        /// False once a hard link failed: every event gets its own file from then on.
        var canLink = true
        /// Told the feed that clips want video as it comes (`VideoFeed.wantLive`).
        var wantingLive = false

        /// Events that came before any video (the encoder's first keyframe): tried again on every pass.
        var waiting: [String: (record: EventRecord, since: UInt64)] = [:]

        init(recorder: ClipRecorder, from index: UInt64) {
            self.recorder = recorder
            ring = PreCaptureRing(keepSeconds: recorder.keepSeconds)
            lastIndex = index
        }

        var joinSeconds: Double { recorder.options.joinSeconds ?? recorder.options.maxSeconds / 2 }

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
                // Video is wanted as it comes only while a clip is written or waits for its first frames.
                let wants = !recordings.isEmpty || !waiting.isEmpty
                if wants != wantingLive {
                    if wants { recorder.feed.wantLive(.main) } else { recorder.feed.unwantLive(.main) }
                    wantingLive = wants
                }
                recorder.status.withLock {
                    $0.active = recordings.reduce(0) { $0 + $1.members.count }
                    $0.files = recordings.count
                    $0.preCaptureSeconds = ring.span.rounded(toPlaces: 2)
                    $0.preCaptureBytes = ring.bytes
                }
                if closed {
                    readFeed()
                    while let last = recordings.indices.last { close(last, because: nil) }
                    if wantingLive { recorder.feed.unwantLive(.main) }
                    break
                }
            }
        }

        /// New access units: into the ring and every file being written.
        mutating func readFeed() {
            let (units, lost) = recorder.feed.units(.main, after: lastIndex)
            if lost, let first = units.first {
                recorder.status.withLock { $0.lostFrames += first.index - lastIndex - 1 }
                ring.reset()
            }
            for unit in units {
                lastIndex = unit.index
                ring.append(unit)
                var index = recordings.count - 1
                while index >= 0 {
                    defer { index -= 1 }
                    do {
                        try recordings[index].writer.append(unit)
                    } catch VideoFileWriter.Failure.newParameterSets {
                        close(index, because: .pictureChanged)   // a new source or size: the clip ends whole here
                        continue
                    } catch {
                        fail(index, error)
                        continue
                    }
                    if unit.capturedAt - recordings[index].writer.start >= recorder.options.maxSeconds {
                        close(index, because: .capped)
                    }
                }
            }
        }

        func recording(holding id: String) -> Int? {
            recordings.indices.first { recordings[$0].members[id] != nil }
        }

        mutating func observe(_ record: EventRecord, since: UInt64 = MonotonicClock.nanos()) {
            if let index = recording(holding: record.id) {
                var member = recordings[index].members[record.id]!
                if member.endKnownNanos == nil && record.endTime != nil { member.endKnownNanos = MonotonicClock.nanos() }
                member.record = record
                recordings[index].members[record.id] = member
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
            var member = Member(record: record)
            if record.endTime != nil { member.endKnownNanos = MonotonicClock.nanos() }
            if join(record, as: member, at: path, from: ring.units[first].capturedAt) { return }
            do {
                let writer = try VideoFileWriter(path: path, first: ring.units[first], width: width, height: height)
                for unit in ring.units[(first + 1)...] { try writer.append(unit) }
                recordings.append(Recording(writer: writer, members: [record.id: member], path: path))
                report(record.id, in: recordings.count - 1, persist: true)
                guard recording(holding: record.id) != nil else { return }
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

        /// The event's clip is the newest file being written, when that one
        /// holds all a clip of its own would (from `start`, the keyframe
        /// before its pre-capture) and has `joinSeconds` left before its cap:
        /// `path` becomes a hard link to it.
        mutating func join(_ record: EventRecord, as member: Member, at path: String, from start: Double) -> Bool {
            guard canLink, let index = recordings.indices.last else { return false }
            let writer = recordings[index].writer
            guard writer.start <= start,
                  writer.start + recorder.options.maxSeconds - writer.lastCapturedAt >= joinSeconds else { return false }
            unlink(path)
            // Any name of the file will do: the one kept may have just been deleted with its event.
            let names = [recordings[index].path] + recordings[index].members.keys.sorted().map(recorder.store.clipPath)
            guard let linked = names.first(where: { link($0, path) == 0 }) else {
                let code = errno
                if [EPERM, EXDEV, EOPNOTSUPP, ENOSYS].contains(code) {
                    canLink = false
                    recorder.logger.warning("clips: cannot hard-link clips here (errno \(code)); overlapping events get a file each")
                }
                return false
            }
            recordings[index].path = linked
            recordings[index].members[record.id] = member
            report(record.id, in: index, persist: true)
            return true
        }

        /// A file closes once every event it holds has ended and post-capture
        /// after the last one's last sighting is written, or `stallSeconds`
        /// after that when no frames come.
        mutating func closeWhatIsDone(now: UInt64) {
            var index = recordings.count - 1
            while index >= 0 {
                defer { index -= 1 }
                let members = recordings[index].members.values
                let ends = members.compactMap(\.endKnownNanos)
                if ends.count == members.count, let endKnown = ends.max() {
                    let lastTime = members.map { $0.record.endTime ?? $0.record.lastTime }.max() ?? 0
                    let reached = recordings[index].writer.lastCapturedAt >= lastTime + recorder.options.postCapture
                    let waited = Double(now &- endKnown) / 1e9
                    if reached || waited >= recorder.options.postCapture + recorder.options.stallSeconds {
                        close(index, because: nil)
                        recorder.status.withLock { $0.lastCompletedAfterEndSeconds = waited.rounded(toPlaces: 3) }
                        continue
                    }
                }
                for (id, member) in recordings[index].members where now &- member.lastReportNanos >= 1_000_000_000 {
                    report(id, in: index, persist: false)
                    if index >= recordings.count { break }
                }
            }
        }

        enum Reason { case capped, pictureChanged }

        mutating func close(_ index: Int, because reason: Reason?) {
            let recording = recordings.remove(at: index)
            do {
                try recording.writer.finish()
            } catch {
                var info = info(recording)
                info.error = "\(error)"
                for id in recording.members.keys {
                    _ = try? recorder.store.updateClip(id, info, persist: true)
                    failed(id, error)
                }
                return
            }
            var info = info(recording)
            info.complete = true
            if reason == .capped { info.capped = true }
            if reason == .pictureChanged { info.error = "ends early: the picture size or the source changed" }
            for id in recording.members.keys.sorted() {
                do {
                    guard try recorder.store.updateClip(id, info, persist: true) else {
                        unlink(recorder.store.clipPath(id))
                        continue
                    }
                } catch {
                    failed(id, error)
                    continue
                }
                recorder.status.withLock { $0.completed += 1 }
            }
        }

        /// A write failed: the file keeps what it has (marked incomplete; on a
        /// full disk the record says so once it can be written), the clip stops.
        /// A file with nothing in it goes, and so does its events' `clip`.
        mutating func fail(_ index: Int, _ error: Error) {
            let recording = recordings.remove(at: index)
            try? recording.writer.finish()
            var info = info(recording)
            info.error = "\(error)"
            for id in recording.members.keys.sorted() {
                if info.frames == 0 {
                    unlink(recorder.store.clipPath(id))
                    recorder.store.removeClip(id)
                } else {
                    do {
                        // Kept in the index even when the record cannot be written now.
                        if try !recorder.store.updateClip(id, info, persist: true) { unlink(recorder.store.clipPath(id)) }
                    } catch {}
                }
                failed(id, error)
            }
        }

        /// The event is gone: its name for the file goes; the file stops when
        /// no event holds it any more.
        mutating func abandon(_ id: String, in index: Int) {
            let path = recorder.store.clipPath(id)
            recordings[index].members[id] = nil
            if recordings[index].members.isEmpty {
                let recording = recordings.remove(at: index)
                try? recording.writer.finish()
            } else if recordings[index].path == path, let other = recordings[index].members.keys.sorted().first {
                recordings[index].path = recorder.store.clipPath(other)
            }
            unlink(path)
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

        func info(_ recording: Recording) -> ClipInfo {
            ClipInfo(start: recording.writer.start, duration: recording.writer.duration.rounded(toPlaces: 3),
                     bytes: AtomicFile.size(of: recording.path) ?? 0, frames: recording.writer.frames)
        }

        /// Tells the store where the event's clip is; an event deleted meanwhile is abandoned.
        mutating func report(_ id: String, in index: Int, persist: Bool) {
            guard recordings[index].members[id] != nil else { return }
            recordings[index].members[id]!.lastReportNanos = MonotonicClock.nanos()
            do {
                if try !recorder.store.updateClip(id, info(recordings[index]), persist: persist) { abandon(id, in: index) }
            } catch {
                fail(index, error)
            }
        }

        mutating func markDone(_ id: String) {
            guard done.insert(id).inserted else { return }
            doneOrder.append(id)
            if doneOrder.count > 4096 { done.remove(doneOrder.removeFirst()) }
        }
    }
}
