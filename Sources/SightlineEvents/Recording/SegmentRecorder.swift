import Foundation
import Logging
import Synchronization
import SightlineVision
import SightlineSupport
import SightlinePipeline

/// Continuous recording (`record.enabled`): the main H.264 rendition, SEI
/// boxes included, written without a break as fragmented MP4 segments
/// (`VideoFileWriter`) into the `RecordingStore`. A segment starts on a
/// keyframe and ends at the first keyframe `segmentSeconds` after its
/// start, where the next one begins, so no frame falls between two. It
/// holds the encoder on while it runs.
///
/// A failed write (a full disk) ends the segment with what it has, says
/// so in `status` and the log (once until writing works again), and the
/// next keyframe tries a new segment: recording resumes by itself when
/// space returns. Retention runs after every segment and every minute.
///
/// Threads: `start`/`stop` on the main thread; the work on its own thread,
/// `sightline.record`, woken by every access unit published; `status` in a `Mutex`.
public final class SegmentRecorder: Sendable {
    public struct Status: Codable, Sendable, Equatable {
        /// "recording", "waiting" (for a keyframe) or "failing".
        public var state = "waiting"
        /// The segment being written.
        public var current: String?
        public var segments: UInt64 = 0
        public var failed: UInt64 = 0
        public var lastError: String?
        public var lostFrames: UInt64 = 0
        /// Bytes kept in all segments.
        public var bytes: Int64 = 0
    }

    public let store: RecordingStore
    private let feed: VideoFeed
    private let segmentSeconds: Double
    private let logger: Logger
    private let status = Locked(Status())
    private let stopping = Atomic<Bool>(false)
    private let started = Atomic<Bool>(false)
    private let wake: (id: UInt64, semaphore: DispatchSemaphore)
    private let finished = DispatchSemaphore(value: 0)

    public init(store: RecordingStore, feed: VideoFeed, segmentSeconds: Double, logger: Logger) {
        self.store = store
        self.feed = feed
        self.segmentSeconds = segmentSeconds
        self.logger = logger
        wake = feed.wakeOnPublish()
    }

    public var snapshot: Status {
        var snapshot = status.withLock { $0 }
        snapshot.bytes = store.totalBytes
        return snapshot
    }

    public func start() {
        started.store(true, ordering: .sequentiallyConsistent)
        feed.holdEncoder(.main)
        let from = feed.lastIndex(.main)
        let thread = Thread { [self] in
            Thread.setOSName("sightline.record")
            BackgroundPriority.lowerCurrentThread()
            run(from: from)
            finished.signal()
        }
        thread.name = "sightline.record"
        thread.start()
    }

    /// Closes the segment with what has been encoded, then ends the thread.
    public func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        wake.semaphore.signal()
        if started.load(ordering: .sequentiallyConsistent) {
            finished.wait()
            feed.releaseEncoder(.main)
        }
        feed.stopWaking(wake.id)
    }

    private func run(from: UInt64) {
        var lastIndex = from
        var writer: VideoFileWriter?
        var name = ""
        var lastRetention = MonotonicClock.nanos()
        var lastReport: UInt64 = 0
        while true {
            _ = wake.semaphore.wait(timeout: .now() + 0.25)
            // Read before the units are taken: once asked to stop, this pass
            // still takes every unit published before the ask, then ends.
            let stopAfterThisPass = stopping.load(ordering: .sequentiallyConsistent)
            let (units, lost) = feed.units(.main, after: lastIndex)
            if lost, let first = units.first { status.withLock { $0.lostFrames += first.index - lastIndex - 1 } }
            for unit in units {
                lastIndex = unit.index
                if let current = writer, unit.isKeyframe, unit.capturedAt - current.start >= segmentSeconds {
                    close(current, name)
                    writer = nil
                }
                if let current = writer {
                    do {
                        try current.append(unit)
                    } catch VideoFileWriter.Failure.newParameterSets {
                        close(current, name)   // a new picture size: a new segment from this keyframe
                        writer = nil
                    } catch {
                        fail(error, writer: current, name: name)
                        writer = nil
                    }
                }
                if writer == nil && unit.isKeyframe {
                    (writer, name) = open(unit)
                }
            }
            let now = MonotonicClock.nanos()
            if let writer, now &- lastReport >= 1_000_000_000 {
                lastReport = now
                store.progress(name, duration: writer.duration, bytes: Int64(writer.bytes))
            }
            if now &- lastRetention >= 60_000_000_000 {
                lastRetention = now
                store.enforceRetention()
            }
            if stopAfterThisPass {
                if let writer { close(writer, name) }
                break
            }
        }
    }

    private func open(_ unit: VideoFeed.Unit) -> (VideoFileWriter?, String) {
        guard let size = feed.renditions().first(where: { $0.rendition == .main }),
              let width = size.width, let height = size.height else { return (nil, "") }
        let name = RecordingStore.name(start: unit.capturedAt)
        do {
            let writer = try VideoFileWriter(path: store.path(name), first: unit, width: width, height: height)
            store.add(RecordingStore.Segment(name: name, start: RecordingStore.parse(name)?.start ?? writer.start, duration: 0,
                                             bytes: Int64(writer.bytes), complete: false))
            let recovered = status.withLock { status -> Bool in
                status.state = "recording"
                status.current = name
                defer { status.lastError = nil }
                return status.lastError != nil
            }
            if recovered { logger.notice("recording: writing works again") }
            return (writer, name)
        } catch {
            store.discard(name)
            report(error)
            return (nil, "")
        }
    }

    private func close(_ writer: VideoFileWriter, _ name: String) {
        do {
            try writer.finish()
            try store.finish(name, duration: writer.duration.rounded(toPlaces: 3))
        } catch {
            report(error)
            return
        }
        status.withLock { $0.segments += 1; $0.current = nil }
        store.enforceRetention()
    }

    /// The segment keeps what it has (or goes, if nothing); the next keyframe tries a new one.
    private func fail(_ error: Error, writer: VideoFileWriter, name: String) {
        try? writer.finish()
        if writer.frames == 0 { store.discard(name) } else {
            store.progress(name, duration: writer.duration, bytes: Int64(writer.bytes))
        }
        report(error)
    }

    private func report(_ error: Error) {
        let message = VideoFileWriter.storageError(error).map { $0.message("cannot write the recording") }
            ?? "cannot write the recording: \(error)"
        let first = status.withLock { status -> Bool in
            status.failed += 1
            status.state = "failing"
            status.current = nil
            defer { status.lastError = message }
            return status.lastError == nil
        }
        if first { logger.error("recording: \(message)") }
    }
}
