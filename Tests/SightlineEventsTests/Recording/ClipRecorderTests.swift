import Foundation
import Logging
import Testing
@testable import SightlinePipeline
@testable import SightlineEvents
import SightlineTesting

/// The clip recorder on its own thread, fed real x264 access units whose
/// capture times are set by the test (10 fps, a keyframe every second).
@Suite("Recording: event clips")
struct ClipRecorderTests {
    typealias F = RecordingFixtures

    func recorder(_ fixtures: RecordingFixtures, store: EventStore, pre: Double = 1, post: Double = 1,
                  max: Double = 300) -> ClipRecorder {
        var options = ClipRecorder.Options()
        options.preCapture = pre
        options.postCapture = post
        options.maxSeconds = max
        options.eventDelay = 0.5
        return ClipRecorder(store: store, feed: fixtures.feed, options: options, logger: Logger(label: "test"))
    }

    /// A fresh store, and `clips` (not yet started) recording from `fixtures`' feed into it.
    func fresh(_ fixtures: RecordingFixtures, pre: Double = 1, max: Double = 300) throws -> (EventStore, ClipRecorder) {
        let store = EventStore(dataDirectory: try TestPaths.temporaryDirectory())
        try store.load()
        return (store, recorder(fixtures, store: store, pre: pre, max: max))
    }

    /// Frames published through `through`, then an open event seen from `first` to `last`
    /// saved and told to `clips`, waited for until its clip has begun.
    func beginEvent(_ name: String, first: Int, last: Int, through: Int, _ fixtures: RecordingFixtures,
                    _ store: EventStore, _ clips: ClipRecorder) throws -> EventRecord {
        try fixtures.publish(through: through)
        let open = fixtures.record(name, first: first, last: last, ended: false)
        try store.save(open)
        clips.enqueue(F.batch(open, .new))
        #expect(F.eventually { store.record(open.id)?.clip != nil })
        return open
    }

    @Test("a clip runs from the keyframe before pre-capture to post-capture after the event's last frame, and plays")
    func preAndPostCapture() throws {
        let fixtures = try RecordingFixtures()
        let (store, clips) = try fresh(fixtures)
        clips.start()
        defer { clips.stop() }
        let open = try beginEvent("aaaaaa", first: 25, last: 29, through: 30, fixtures, store, clips)
        try fixtures.publish(through: 45)
        let ended = fixtures.record("aaaaaa", first: 25, last: 40, ended: true)
        try store.save(ended)
        clips.enqueue(F.batch(ended, .end))
        try fixtures.publish(through: 60)
        #expect(F.eventually { store.record(open.id)?.clip?.complete == true })
        let clip = try #require(store.record(open.id)?.clip)
        // Event at frame 25 (2.5 s), pre-capture 1 s: the newest keyframe at or before 1.5 s is frame 10.
        #expect(clip.start == fixtures.time(10))
        // Last seen at frame 40, post-capture 1 s: frames through 50 at least (a batch may bring a few more).
        #expect((41...50).contains(clip.frames), "frames \(clip.frames)")
        #expect(clip.duration >= 4.0 && clip.capped == nil && clip.error == nil)
        let probe = try VideoFileProbe.read(store.clipPath(open.id))
        #expect(probe.packets == clip.frames && probe.width == 64 && probe.height == 48)
        #expect(probe.keyframes >= (clip.frames + 9) / 10)
        #expect(clip.bytes == Int(RecordingStore.size(store.clipPath(open.id))))
        #expect(store.totals.bytes >= clip.bytes, "retention counts the clip as part of its event")
        #expect(F.eventually { clips.snapshot.completed == 1 && clips.snapshot.active == 0 })
        #expect(clips.snapshot.state == "recording" && clips.snapshot.failed == 0)
    }

    @Test("an event longer than maxClipSeconds has its clip capped there; overlapping events share one file, counted once")
    func cappedAndOverlapping() throws {
        let fixtures = try RecordingFixtures()
        let (store, clips) = try fresh(fixtures, pre: 0, max: 2)
        clips.start()
        defer { clips.stop() }
        try fixtures.publish(through: 11)
        let long = fixtures.record("bbbbbb", first: 10, last: 10, ended: false)
        let other = fixtures.record("cccccc", first: 10, last: 10, ended: false)
        try store.save(long)
        try store.save(other)
        clips.enqueue(EventBatch(changes: F.batch(long, .new).changes + F.batch(other, .new).changes))
        #expect(F.eventually { store.record(long.id)?.clip != nil && store.record(other.id)?.clip != nil },
                "\(clips.snapshot)")
        try fixtures.publish(through: 40)
        #expect(F.eventually { store.record(long.id)?.clip?.complete == true })
        let clip = try #require(store.record(long.id)?.clip)
        #expect(clip.capped == true && clip.start == fixtures.time(10))
        #expect((20...21).contains(clip.frames), "2 s at 10 fps, frames \(clip.frames)")
        #expect(store.clipPath(long.id) != store.clipPath(other.id))
        // One file with two names: the same inode, two links, the same clip in both records.
        #expect(F.eventually { store.record(other.id)?.clip?.complete == true })
        let shared = try #require(store.clipFile(long.id))
        #expect(store.clipFile(other.id) == shared)
        #expect(Self.links(store.clipPath(long.id)) == 2)
        #expect(store.record(other.id)?.clip == clip)
        #expect(F.eventually { clips.snapshot.completed == 2 && clips.snapshot.files == 0 })
        // Retention counts the file once: two small records and one clip, not two.
        let records = Int(RecordingStore.size(store.recordPath(long.id)) + RecordingStore.size(store.recordPath(other.id)))
        #expect(clip.bytes > 2 * records, "a clip larger than its records, so counting it twice would show")
        #expect(store.totals.bytes >= clip.bytes && store.totals.bytes < clip.bytes + 2 * records, "\(store.totals)")
    }

    @Test("an event that begins when the clip being written has less than joinSeconds left gets a file of its own; deleting one holder of a shared file keeps it for the others")
    func joinWindowAndSharedDeletion() throws {
        let fixtures = try RecordingFixtures()
        let store = EventStore(dataDirectory: try TestPaths.temporaryDirectory())
        try store.load()
        var options = ClipRecorder.Options()
        options.preCapture = 0
        options.postCapture = 1
        options.maxSeconds = 10
        options.joinSeconds = 7
        options.eventDelay = 0.5
        let clips = ClipRecorder(store: store, feed: fixtures.feed, options: options, logger: Logger(label: "test"))
        clips.start()
        defer { clips.stop() }
        let first = try beginEvent("gggggg", first: 10, last: 10, through: 11, fixtures, store, clips)
        // Frame 20 (1 s in, 9 s left of 10): joins.
        let second = try beginEvent("hhhhhh", first: 20, last: 20, through: 21, fixtures, store, clips)
        #expect(store.clipFile(first.id) == store.clipFile(second.id))
        #expect(store.record(second.id)?.clip?.start == fixtures.time(10), "the shared clip starts where the first did")
        // The first event, whose name the file was written under, is deleted while it is written:
        // the second still holds it, and one that begins now joins it through the second's name.
        #expect(store.delete(first.id))
        #expect(!FileManager.default.fileExists(atPath: store.clipPath(first.id)))
        let late = try beginEvent("kkkkkk", first: 22, last: 22, through: 23, fixtures, store, clips)
        #expect(store.clipFile(late.id) == store.clipFile(second.id) && store.clipFile(late.id) != nil)
        // Frame 50 (4 s in, 6 s left, under joinSeconds): a file of its own.
        let third = try beginEvent("iiiiii", first: 50, last: 50, through: 51, fixtures, store, clips)
        #expect(store.clipFile(third.id) != store.clipFile(second.id))
        #expect(store.record(third.id)?.clip?.start == fixtures.time(50))
        #expect(F.eventually { clips.snapshot.files == 2 && clips.snapshot.active == 3 }, "\(clips.snapshot)")
        try fixtures.publish(through: 60)
        let ends = [("hhhhhh", 20), ("kkkkkk", 22), ("iiiiii", 50)].map { fixtures.record($0.0, first: $0.1, last: 55, ended: true) }
        for end in ends { try store.save(end) }
        clips.enqueue(EventBatch(changes: ends.flatMap { F.batch($0, .end).changes }))
        try fixtures.publish(through: 75)
        #expect(F.eventually { ends.allSatisfy { store.record($0.id)?.clip?.complete == true } })
        let kept = try #require(store.record(second.id)?.clip)
        #expect(store.record(late.id)?.clip == kept)
        #expect(kept.start == fixtures.time(10) && kept.frames >= 55 - 10 + 10, "frames \(kept.frames)")
        let probe = try VideoFileProbe.read(store.clipPath(second.id))
        #expect(probe.packets == kept.frames && Self.links(store.clipPath(second.id)) == 2)
        let own = try #require(store.record(third.id)?.clip)
        #expect(store.totals.bytes >= kept.bytes + own.bytes)
        #expect(store.totals.bytes < 2 * kept.bytes + own.bytes, "the shared file counted once: \(store.totals)")
        // Its last holder deleted, the shared file's space is no longer counted.
        #expect(store.delete(second.id))
        let before = store.totals.bytes
        #expect(store.delete(late.id))
        #expect(store.totals.bytes < before - kept.bytes + 1)
        #expect(!FileManager.default.fileExists(atPath: store.clipPath(second.id)))
    }

    static func links(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_nlink) : 0
    }

    @Test("deleting an event while its clip is written stops the clip and removes the file")
    func deletedWhileWritten() throws {
        let fixtures = try RecordingFixtures()
        let (store, clips) = try fresh(fixtures)
        clips.start()
        defer { clips.stop() }
        let open = try beginEvent("dddddd", first: 15, last: 19, through: 20, fixtures, store, clips)
        #expect(store.delete(open.id))
        var published = 20
        #expect(F.eventually {
            published += 1
            try? fixtures.publish(through: published)   // frames keep coming while the recorder notices
            return clips.snapshot.active == 0
        })
        #expect(!FileManager.default.fileExists(atPath: store.clipPath(open.id)))
    }

    @Test("a new picture size (another source) ends the clip whole, not as a failure")
    func newPictureSizeEndsTheClip() throws {
        let fixtures = try RecordingFixtures()
        let (store, clips) = try fresh(fixtures)
        clips.start()
        defer { clips.stop() }
        let open = try beginEvent("ffffff", first: 15, last: 19, through: 20, fixtures, store, clips)
        try fixtures.publish(through: 25)
        try fixtures.publishResizedKeyframe()
        #expect(F.eventually { store.record(open.id)?.clip?.complete == true })
        let clip = try #require(store.record(open.id)?.clip)
        #expect(clip.error?.contains("ends early") == true)
        #expect(try VideoFileProbe.read(store.clipPath(open.id)).width == 64)
        #expect(F.eventually { clips.snapshot.completed == 1 })
        #expect(clips.snapshot.failed == 0 && clips.snapshot.state == "recording")
    }

    @Test("stopping closes open clips whole with what was encoded")
    func stopClosesClips() throws {
        let fixtures = try RecordingFixtures()
        let (store, clips) = try fresh(fixtures)
        clips.start()
        let open = try beginEvent("eeeeee", first: 20, last: 24, through: 25, fixtures, store, clips)
        try fixtures.publish(through: 35)
        #expect(F.eventually { (store.record(open.id)?.clip?.frames ?? 0) > 0 })
        clips.stop()
        let clip = try #require(store.record(open.id)?.clip)
        #expect(clip.complete && clip.start == fixtures.time(10))
        #expect(try VideoFileProbe.read(store.clipPath(open.id)).packets == clip.frames)
    }
}
