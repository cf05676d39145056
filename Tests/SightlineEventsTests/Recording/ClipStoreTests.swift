import Foundation
import Testing
@testable import SightlinePipeline
@testable import SightlineEvents
import SightlineTesting
import SightlineEventsTesting

/// What `EventStore.load` makes of clips after a crash or a hand edit.
@Suite("Recording: clips in the event store")
struct ClipStoreTests {
    typealias S = StoredEvents

    /// A clip as a `kill -9` leaves it: the file as it was while written (fragments flushed so far).
    func cutClip(at path: String, frames: Int) throws -> Int {
        let fixtures = try RecordingFixtures()
        try fixtures.publish(through: frames)
        let units = fixtures.feed.units(.main, after: 0).units
        let writing = path + ".writing"
        let writer = try VideoFileWriter(path: writing, first: units[0], width: 64, height: 48)
        for unit in units.dropFirst() { try writer.append(unit) }
        try FileManager.default.copyItem(atPath: writing, toPath: path)   // before the last fragment and the index
        try writer.finish()
        unlink(writing)
        return Int(RecordingStore.size(path))
    }

    @Test("a clip cut short is kept and measured up to its last fragment; complete clips keep their record")
    func cutClipIsMeasured() throws {
        let dir = try TestPaths.temporaryDirectory()
        let store = EventStore(dataDirectory: dir)
        try store.load()
        var open = S.record(1, open: true)
        try store.save(open)
        try store.updateClip(open.id, ClipInfo(start: open.startTime), persist: true)
        let bytes = try cutClip(at: store.clipPath(open.id), frames: 35)
        #expect(bytes > 0)
        open.endTime = nil
        let again = EventStore(dataDirectory: dir)
        let report = try again.load()
        #expect(report.cutClips == 1 && report.closed == 1)
        let clip = try #require(again.record(open.id)?.clip)
        #expect(!clip.complete && clip.error?.contains("cut short") == true)
        let probe = try VideoFileProbe.read(again.clipPath(open.id))
        #expect(clip.frames == probe.packets && clip.frames >= 20 && clip.frames <= 35, "frames \(clip.frames)")
        #expect(clip.bytes == bytes)
        #expect(again.totals.bytes >= bytes)
    }

    @Test("a clip file without a record goes; a record whose clip file is gone loses its clip")
    func clipFilesAndRecordsAgree() throws {
        let dir = try TestPaths.temporaryDirectory()
        let store = EventStore(dataDirectory: dir)
        try store.load()
        let kept = S.record(1)
        try store.save(kept)
        try store.updateClip(kept.id, ClipInfo(start: kept.startTime, duration: 1, bytes: 10, frames: 10, complete: true),
                             persist: true)
        let orphan = S.record(2).id
        try Data("not a clip".utf8).write(to: URL(fileURLWithPath: store.clipPath(orphan)))
        let again = EventStore(dataDirectory: dir)
        let report = try again.load()
        #expect(report.removedFiles.contains(orphan + ".mp4"))
        #expect(again.record(kept.id) != nil && again.record(kept.id)?.clip == nil, "its file never existed")
        #expect(!FileManager.default.fileExists(atPath: again.clipPath(orphan)))
    }

    @Test("a clip begun before its event's record was saved is kept with the record's first save; deleting removes it")
    func pendingClipAndDelete() throws {
        let store = EventStore(dataDirectory: try TestPaths.temporaryDirectory())
        try store.load()
        let event = S.record(3)
        #expect(try store.updateClip(event.id, ClipInfo(start: event.startTime, bytes: 5), persist: true))
        try Data("12345".utf8).write(to: URL(fileURLWithPath: store.clipPath(event.id)))
        try store.save(event)
        #expect(store.record(event.id)?.clip?.bytes == 5)
        #expect(store.delete(event.id))
        #expect(!FileManager.default.fileExists(atPath: store.clipPath(event.id)))
        #expect(try !store.updateClip(event.id, ClipInfo(start: event.startTime), persist: true), "deleted: the clip stops")
    }
}
