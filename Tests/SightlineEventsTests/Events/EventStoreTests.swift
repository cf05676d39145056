import Foundation
import Testing
@testable import SightlineVision
@testable import SightlineEvents
import SightlineTesting
import SightlineEventsTesting

/// Event records for store and API tests.
@Suite struct EventStoreTests {
    typealias S = StoredEvents

    @Test func savedEventsComeBackAfterARestartWithTheirImages() throws {
        let dir = try TestPaths.temporaryDirectory()
        let store = EventStore(dataDirectory: dir)
        try store.load()
        #expect(try store.save(S.record(1), snapshot: Data("jpeg 1".utf8), crop: Data("crop 1".utf8)))
        #expect(try store.save(S.record(2, open: true), snapshot: Data("jpeg 2".utf8)))
        #expect(try store.save(S.record(3)))
        let again = EventStore(dataDirectory: dir)
        let report = try again.load()
        #expect(report.loaded == 3 && report.closed == 1 && report.removedFiles.isEmpty)
        #expect(again.record(S.record(1).id)?.snapshotBytes == 6)
        #expect(again.image(S.record(1).id, crop: true) == Data("crop 1".utf8))
        #expect(again.image(S.record(2).id, crop: false) == Data("jpeg 2".utf8))
        #expect(again.image(S.record(2).id, crop: true) == nil)
        let reopened = again.record(S.record(2).id)!
        #expect(reopened.interrupted == true && reopened.endTime == reopened.lastTime, "closed at its last sighting")
        #expect(again.totals.events == 3 && again.totals.open == 0)
    }

    @Test func whatAKillLeavesBehindIsRemovedAtLoad() throws {
        let dir = try TestPaths.temporaryDirectory()
        let store = EventStore(dataDirectory: dir)
        try store.load()
        try store.save(S.record(1), snapshot: Data("jpeg".utf8), crop: Data("crop".utf8))
        try store.save(S.record(2), snapshot: Data("jpeg".utf8), crop: Data("crop".utf8))
        let events = store.directory
        let orphan = S.record(9).id
        try Data("image without a record".utf8).write(to: URL(fileURLWithPath: "\(events)/\(orphan).jpg"))
        try Data("half".utf8).write(to: URL(fileURLWithPath: "\(events)/\(S.record(1).id).jpg.tmp-4242"))
        try Data("{\"id\": \"cut sh".utf8).write(to: URL(fileURLWithPath: "\(events)/\(S.record(8).id).json"))
        // A record whose snapshot was removed by hand: it goes, with what is left of it.
        unlink("\(events)/\(S.record(2).id).jpg")
        try Data("not ours".utf8).write(to: URL(fileURLWithPath: "\(events)/README"))
        let again = EventStore(dataDirectory: dir)
        let report = try again.load()
        #expect(report.loaded == 1)
        #expect(Set(report.removedFiles) == ["\(orphan).jpg", "\(S.record(1).id).jpg.tmp-4242", "\(S.record(8).id).json",
                                             "\(S.record(2).id).json", "\(S.record(2).id).crop.jpg"])
        let id = S.record(1).id
        let left = try S.files(again)
        #expect(left == ["README", "\(id).crop.jpg", "\(id).jpg", "\(id).json"].sorted(), "\(left)")
    }

    @Test func retentionDeletesOldestFirstAndLeavesNoRecordWithoutItsFiles() throws {
        let dir = try TestPaths.temporaryDirectory()
        var limits = EventStore.Limits()
        limits.maxEvents = 3
        let store = EventStore(dataDirectory: dir, limits: limits)
        try store.load()
        for n in [5, 1, 4, 2, 3, 6] {  // saved out of order: retention goes by start time
            try store.save(S.record(n), snapshot: Data(repeating: 1, count: 100), crop: Data(repeating: 2, count: 10))
            store.enforceRetention(now: 1_800_000_100)
        }
        #expect(store.allIDs == [4, 5, 6].map { S.record($0).id })
        let files = try S.files(store)
        #expect(files.count == 9)
        for id in store.allIDs {
            #expect(files.contains("\(id).json") && files.contains("\(id).jpg") && files.contains("\(id).crop.jpg"))
        }
        // A deleted event is not brought back by a late update.
        #expect(try store.save(S.record(1)) == false)
        #expect(store.record(S.record(1).id) == nil)
    }

    @Test func retentionByBytesAndAge() throws {
        let dir = try TestPaths.temporaryDirectory()
        let first = EventStore(dataDirectory: dir)
        try first.load()
        for n in 1...4 { try first.save(S.record(n), snapshot: Data(repeating: 1, count: 2_000)) }
        let each = first.totals.bytes / 4
        var limits = EventStore.Limits()
        limits.maxBytes = each * 2 + each / 2
        limits.maxAgeSeconds = 100
        let store = EventStore(dataDirectory: dir, limits: limits)
        let report = try store.load(now: 1_800_000_000)
        #expect(report.expired == 2 && report.loaded == 2, "two events fit in two and a half events' bytes")
        #expect(store.allIDs == [3, 4].map { S.record($0).id })
        #expect(store.totals.bytes <= limits.maxBytes)
        // Records 3 and 4 ended at 1_800_000_033 and _043.
        #expect(store.enforceRetention(now: 1_800_000_140) == [S.record(3).id])
        #expect(store.allIDs == [S.record(4).id])
        #expect(try S.files(store) == ["\(S.record(4).id).jpg", "\(S.record(4).id).json"])
    }

    @Test func listsNewestFirstWithFiltersAndPages() throws {
        let dir = try TestPaths.temporaryDirectory()
        let store = EventStore(dataDirectory: dir)
        try store.load()
        for n in 1...7 {
            try store.save(S.record(n, kind: n % 2 == 0 ? .face : .template, name: n == 4 ? "Ada" : nil))
        }
        let all = store.list(EventQuery(limit: 3))
        #expect(all.events.map(\.id) == [7, 6, 5].map { S.record($0).id })
        #expect(all.next == S.record(5).id)
        let second = store.list(EventQuery(before: all.next, limit: 3))
        #expect(second.events.map(\.id) == [4, 3, 2].map { S.record($0).id })
        let last = store.list(EventQuery(before: second.next, limit: 3))
        #expect(last.events.map(\.id) == [S.record(1).id] && last.next == nil)
        #expect(store.list(EventQuery(kind: .face)).events.count == 3)
        #expect(store.list(EventQuery(labelOrName: "ada")).events.map(\.id) == [S.record(4).id])
        #expect(store.list(EventQuery(labelOrName: "LOGO")).events.count == 4)
        // Records n run from 1_800_000_000 + 10n to + 3.
        let window = store.list(EventQuery(from: 1_800_000_031, to: 1_800_000_045))
        #expect(window.events.map(\.id) == [4, 3].map { S.record($0).id })
        #expect(store.list(EventQuery(before: S.record(99).id)).events.isEmpty, "an unknown cursor lists nothing")
    }

    @Test func queriesAreCheckedAndExplained() throws {
        #expect(try EventQuery.parse(["kind": "face", "name": "Ada", "limit": "5", "from": "1", "to": "2"]).get()
                == EventQuery(kind: .face, labelOrName: "Ada", from: 1, to: 2, limit: 5))
        for bad in [["kind": "cat"], ["limit": "0"], ["limit": "501"], ["limit": "x"], ["from": "-1"], ["to": "nan"],
                    ["from": "5", "to": "1"], ["before": "../x"], ["label": "a", "name": "b"], ["sort": "up"],
                    ["label": String(repeating: "x", count: 65)]] {
            guard case .failure(let problem) = EventQuery.parse(bad) else {
                Issue.record("accepted \(bad)")
                continue
            }
            #expect(!problem.error.isEmpty && !problem.detail.isEmpty)
        }
    }

    @Test("a clip file shared by events (hard links) is counted once, also after a restart, and its space comes back with the last of them")
    func sharedClipCountedOnce() throws {
        let dir = try TestPaths.temporaryDirectory()
        let store = EventStore(dataDirectory: dir)
        try store.load()
        let ids = (1...3).map { S.record($0).id }
        for n in 1...3 { try store.save(S.record(n)) }
        let clip = Data((0..<50_000).map { UInt8($0 % 251) })
        try clip.write(to: URL(fileURLWithPath: store.clipPath(ids[0])))
        for id in ids.dropFirst() { #expect(link(store.clipPath(ids[0]), store.clipPath(id)) == 0) }
        let info = ClipInfo(start: 1, duration: 5, bytes: clip.count, frames: 50, complete: true)
        for id in ids { #expect(try store.updateClip(id, info, persist: true)) }
        let records = store.totals.bytes - clip.count
        #expect(records > 0 && records < 10_000, "\(store.totals): one clip and three records")
        let again = EventStore(dataDirectory: dir)
        try again.load()
        #expect(again.totals.events == 3 && again.totals.bytes < clip.count + 10_000, "\(again.totals)")
        #expect(again.delete(ids[0]) && again.delete(ids[1]))
        #expect(again.totals.bytes > clip.count, "the third still holds the clip")
        #expect(FileManager.default.contents(atPath: again.clipPath(ids[2])) == clip)
        #expect(again.delete(ids[2]))
        #expect(again.totals.bytes == 0 && again.totals.events == 0)
    }

    @Test func deletingRemovesTheRecordAndItsImages() throws {
        let dir = try TestPaths.temporaryDirectory()
        let store = EventStore(dataDirectory: dir)
        try store.load()
        try store.save(S.record(1), snapshot: Data("a".utf8), crop: Data("b".utf8))
        #expect(store.delete(S.record(1).id))
        #expect(!store.delete(S.record(1).id))
        #expect(try S.files(store).isEmpty)
        #expect(store.totals == EventStore.Totals(events: 0, open: 0, bytes: 0))
    }
}
