import Foundation
import Synchronization
import SightlineVision
import SightlineSupport
import SightlinePipeline

/// Events on disk, in `<data-dir>/events/`: per event `<id>.json` (the
/// record), `<id>.jpg` (its best frame, the stream's own JPEG),
/// `<id>.crop.jpg` (its box) and `<id>.mp4` (its clip, written by the
/// `ClipRecorder` as it goes). Every image is written whole or not at all (a
/// temporary file, then rename), images before the record, so a record on
/// disk always has the files it names; deleting removes the record first.
/// What an interrupted write or a `kill -9` leaves (temporary files, files
/// without a record, a record cut short) is removed at `load`, and events
/// that were still open are closed at their last sighting (`interrupted`).
/// A clip cut short keeps what it has (it plays up to its last fragment):
/// `load` measures it and says `complete: false`; a record whose clip file
/// is gone loses its `clip`. Retention keeps at most `maxEvents` events,
/// none older than `maxAgeSeconds` and at most `maxBytes` in all (clips
/// included: a clip is part of its event), deleting oldest first. Events
/// whose clips overlapped share one file (`<id>.mp4` hard links to it, see
/// `ClipRecorder`): it is counted once, and its space comes back when the
/// last event holding it is deleted.
///
/// Threads: `save` and retention on the recorder thread, `delete` on the
/// request worker, reads (list, record, image files) on any thread. File
/// changes are serialized by the `disk` mutex; the in-memory index (what
/// lists read) is in the `index` mutex, held only for memory work and
/// always taken inside `disk` when both are needed.
public final class EventStore: Sendable {
    public struct Limits: Sendable, Equatable {
        public var maxEvents = 1000
        public var maxAgeSeconds = 30 * 86_400.0
        public var maxBytes = 500 * 1_048_576
        public init() {}
    }

    /// What `load` found and did.
    public struct LoadReport: Sendable, Equatable {
        public var loaded = 0
        /// Open events closed at their last sighting (the server had not stopped cleanly).
        public var closed = 0
        /// Leftovers removed: temporary files, images without a record, unreadable records.
        public var removedFiles: [String] = []
        /// Events deleted by retention at start.
        public var expired = 0
        /// Clips found cut short (kept, measured, `complete: false`).
        public var cutClips = 0
    }

    public struct Totals: Codable, Sendable, Equatable {
        public var events: Int
        public var open: Int
        public var bytes: Int
    }

    private struct Entry {
        var record: EventRecord
        /// Its record and images; its clip is counted with `clipFile`.
        var bytes: Int
        var clipFile: ClipFile?
    }

    /// A clip file as the file system knows it, whatever its names.
    struct ClipFile: Hashable {
        var device: UInt64
        var inode: UInt64
    }

    private struct Index {
        var entries: [String: Entry] = [:]
        /// Ids sorted by (start time, id), oldest first.
        var ordered: [String] = []
        /// Every entry's bytes and every clip file's, each file once.
        var bytes = 0
        /// Clip files, their size and the events holding them.
        var clipFiles: [ClipFile: (bytes: Int, holders: Set<String>)] = [:]

        /// Counts `id`'s clip as `file` of `size` bytes (nil: it has none).
        mutating func hold(_ file: ClipFile?, bytes size: Int, by id: String) {
            let old = entries[id]?.clipFile
            if let old, old != file, var held = clipFiles[old] {
                held.holders.remove(id)
                if held.holders.isEmpty {
                    bytes -= held.bytes
                    clipFiles[old] = nil
                } else {
                    clipFiles[old] = held
                }
            }
            entries[id]?.clipFile = file
            guard let file else { return }
            var held = clipFiles[file] ?? (0, [])
            bytes += size - held.bytes
            held.bytes = size
            held.holders.insert(id)
            clipFiles[file] = held
        }
    }

    /// Ids deleted lately (a later save of the same event is ignored), oldest
    /// first; clips begun for events whose record is not saved yet.
    private struct Disk {
        var deleted: Set<String> = []
        var deletedOrder: [String] = []
        var pendingClips: [String: ClipInfo] = [:]
    }

    private static let rememberedDeletions = 4096

    public let directory: String
    public let limits: Limits
    private let index = Locked(Index())
    private let disk = Locked(Disk())

    public init(directory: String, limits: Limits = Limits()) {
        self.directory = directory
        self.limits = limits
    }

    /// `<data-dir>/events`.
    public convenience init(dataDirectory: String, limits: Limits = Limits()) {
        self.init(directory: (dataDirectory as NSString).appendingPathComponent("events"), limits: limits)
    }

    public func snapshotPath(_ id: String) -> String { path(id, ".jpg") }
    public func cropPath(_ id: String) -> String { path(id, ".crop.jpg") }
    public func clipPath(_ id: String) -> String { path(id, ".mp4") }
    func recordPath(_ id: String) -> String { path(id, ".json") }

    private func path(_ id: String, _ suffix: String) -> String {
        (directory as NSString).appendingPathComponent(id + suffix)
    }

    // MARK: - Start

    /// Reads what is on disk (main thread, before the recorder starts).
    @discardableResult
    public func load(now: Double = Date().timeIntervalSince1970) throws -> LoadReport {
        try AtomicFile.makeDirectory(directory)
        var report = LoadReport()
        let names = try FileManager.default.contentsOfDirectory(atPath: directory)
        var records: [String: EventRecord] = [:]
        var images: [String: [String]] = [:]
        for name in names {
            if name.contains(".tmp-") {
                remove(name, into: &report)
                continue
            }
            guard let (id, suffix) = Self.split(name) else { continue }  // not ours: left alone
            if suffix == ".json" {
                if let data = FileManager.default.contents(atPath: path(id, suffix)),
                   let record = try? JSONDecoder().decode(EventRecord.self, from: data), record.id == id {
                    records[id] = record
                } else {
                    remove(name, into: &report)
                }
            } else {
                images[id, default: []].append(name)
            }
        }
        for (id, files) in images where records[id] == nil {
            for file in files { remove(file, into: &report) }
        }
        var loaded = Index()
        for (id, var record) in records {
            let snapshotSize = fileSize(snapshotPath(id))
            let cropSize = fileSize(cropPath(id))
            if (record.snapshotBytes != nil && snapshotSize == nil) || (record.cropBytes != nil && cropSize == nil) {
                // Named files are missing (removed by hand): the record goes too.
                for suffix in Self.suffixes where fileSize(path(id, suffix)) != nil {
                    remove(id + suffix, into: &report)
                }
                continue
            }
            record.snapshotBytes = snapshotSize
            record.cropBytes = cropSize
            var changed = false
            let clip = loadClip(id, record.clip, into: &report)
            if clip != record.clip {
                record.clip = clip
                changed = true
            }
            if record.endTime == nil {
                record.endTime = record.lastTime
                record.interrupted = true
                report.closed += 1
                changed = true
            }
            if changed { _ = try? write(record) }
            let bytes = (snapshotSize ?? 0) + (cropSize ?? 0) + (fileSize(recordPath(id)) ?? 0)
            loaded.entries[id] = Entry(record: record, bytes: bytes)
            loaded.bytes += bytes
            if let clip = record.clip { loaded.hold(clipFile(id), bytes: clip.bytes, by: id) }
        }
        loaded.ordered = loaded.entries.keys.sorted { Self.older(loaded.entries[$0]!.record, loaded.entries[$1]!.record) }
        report.loaded = loaded.entries.count
        index.withLock { $0 = loaded }
        report.expired = enforceRetention(now: now).count
        report.loaded -= report.expired
        return report
    }

    /// The clip as it is on disk: a complete one as recorded (its size
    /// checked), one cut short (a crash while it was written) measured
    /// packet by packet; nil, and the file removed, when there is no file
    /// or nothing in it plays.
    private func loadClip(_ id: String, _ clip: ClipInfo?, into report: inout LoadReport) -> ClipInfo? {
        guard let size = fileSize(clipPath(id)) else { return nil }
        if var clip, clip.complete {
            clip.bytes = size
            return clip
        }
        guard let probe = try? VideoFileProbe.read(clipPath(id)), probe.keyframes > 0 else {
            remove(id + ".mp4", into: &report)
            return nil
        }
        var measured = clip ?? ClipInfo(start: 0)
        measured.bytes = size
        measured.duration = probe.duration.rounded(toPlaces: 3)
        measured.frames = probe.packets
        measured.complete = false
        if measured.error == nil { measured.error = "cut short: the server stopped while it was written" }
        report.cutClips += 1
        return measured
    }

    static let suffixes = [".crop.jpg", ".jpg", ".json", ".mp4"]

    /// `<id><suffix>` for the four kinds of file; nil for anything else.
    static func split(_ name: String) -> (String, String)? {
        for suffix in suffixes where name.hasSuffix(suffix) {
            let id = String(name.dropLast(suffix.count))
            return EventRecord.isValidID(id) ? (id, suffix) : nil
        }
        return nil
    }

    private func remove(_ name: String, into report: inout LoadReport) {
        if unlink((directory as NSString).appendingPathComponent(name)) == 0 { report.removedFiles.append(name) }
    }

    // MARK: - Changes

    /// Stores the event as it is now, with new images when given (recorder
    /// thread). Returns false when the event was deleted meanwhile (by
    /// retention or the API): it is not brought back.
    @discardableResult
    public func save(_ event: EventRecord, snapshot: Data? = nil, crop: Data? = nil) throws -> Bool {
        try disk.withLock { disk -> Bool in
            guard !disk.deleted.contains(event.id), EventRecord.isValidID(event.id) else { return false }
            var record = event
            let previous = index.withLock { $0.entries[event.id]?.record }
            record.snapshotBytes = previous?.snapshotBytes
            record.cropBytes = previous?.cropBytes
            // The clip is the clip recorder's to say (`updateClip`), whatever the tracker's copy has.
            record.clip = previous?.clip ?? disk.pendingClips.removeValue(forKey: event.id)
            if let snapshot {
                try AtomicFile.write(snapshot, to: snapshotPath(event.id))
                record.snapshotBytes = snapshot.count
            }
            if let crop {
                try AtomicFile.write(crop, to: cropPath(event.id))
                record.cropBytes = crop.count
            }
            let json = try write(record)
            let bytes = json + (record.snapshotBytes ?? 0) + (record.cropBytes ?? 0)
            let newClip = previous == nil ? record.clip : nil
            let file = newClip == nil ? nil : clipFile(record.id)
            index.withLock { index in
                if let old = index.entries[record.id] {
                    index.bytes -= old.bytes
                    index.entries[record.id] = Entry(record: record, bytes: bytes, clipFile: old.clipFile)
                } else {
                    let position = index.ordered.partitioningIndex { Self.older(record, index.entries[$0]!.record) }
                    index.ordered.insert(record.id, at: position)
                    index.entries[record.id] = Entry(record: record, bytes: bytes)
                }
                index.bytes += bytes
                if let newClip { index.hold(file, bytes: newClip.bytes, by: record.id) }
            }
            return true
        }
    }

    /// Deletes an event: the record (and the index entry) first, then its
    /// images. False when there is no such event.
    @discardableResult
    public func delete(_ id: String) -> Bool {
        disk.withLock { disk -> Bool in
            let removed = index.withLock { index -> Bool in
                guard let entry = index.entries[id] else { return false }
                index.hold(nil, bytes: 0, by: id)
                index.entries[id] = nil
                index.bytes -= entry.bytes
                index.ordered.removeAll { $0 == id }
                return true
            }
            guard removed else { return false }
            unlink(recordPath(id))
            unlink(snapshotPath(id))
            unlink(cropPath(id))
            unlink(clipPath(id))
            disk.pendingClips.removeValue(forKey: id)
            disk.deleted.insert(id)
            disk.deletedOrder.append(id)
            if disk.deletedOrder.count > Self.rememberedDeletions {
                disk.deleted.remove(disk.deletedOrder.removeFirst())
            }
            return true
        }
    }

    /// The clip recorder's news about an event's clip (its thread). Kept in
    /// the index at once (lists and retention count its bytes); written to
    /// the record when `persist` (its start and its end), or with the
    /// record's first save when the recorder has not saved it yet. False
    /// when the event was deleted: its clip should stop.
    @discardableResult
    public func updateClip(_ id: String, _ clip: ClipInfo, persist: Bool) throws -> Bool {
        try disk.withLock { disk -> Bool in
            guard !disk.deleted.contains(id), EventRecord.isValidID(id) else { return false }
            let file = clipFile(id)
            guard let stored = index.withLock({ Self.setClip(clip, file: file, of: id, in: &$0) }) else {
                disk.pendingClips[id] = clip
                return true
            }
            if persist { try write(stored) }
            return true
        }
    }

    /// The event has no clip after all (its file held nothing and was removed):
    /// `clip` goes from the index and, when it can be written, the record.
    public func removeClip(_ id: String) {
        disk.withLock { disk in
            disk.pendingClips.removeValue(forKey: id)
            let stored = index.withLock {
                $0.entries[id]?.record.clip == nil ? nil : Self.setClip(nil, file: nil, of: id, in: &$0)
            }
            if let stored { _ = try? write(stored) }
        }
    }

    /// Sets (or, with nil, removes) an indexed event's clip, its bytes counted
    /// once for `file` whichever events hold it; the record as it is now, nil
    /// when it is not indexed.
    private static func setClip(_ clip: ClipInfo?, file: ClipFile?, of id: String,
                                in index: inout Index) -> EventRecord? {
        guard index.entries[id] != nil else { return nil }
        index.entries[id]!.record.clip = clip
        index.hold(clip == nil ? nil : file, bytes: clip?.bytes ?? 0, by: id)
        return index.entries[id]!.record
    }

    /// Deletes oldest first until the limits hold; returns the ids deleted.
    @discardableResult
    public func enforceRetention(now: Double = Date().timeIntervalSince1970) -> [String] {
        var deleted: [String] = []
        for _ in 0..<100_000 {
            let oldest = index.withLock { index -> String? in
                guard let first = index.ordered.first, let entry = index.entries[first] else { return nil }
                let tooMany = index.ordered.count > limits.maxEvents
                let tooBig = index.bytes > limits.maxBytes
                let tooOld = now - (entry.record.endTime ?? entry.record.lastTime) > limits.maxAgeSeconds
                return tooMany || tooBig || tooOld ? first : nil
            }
            guard let oldest else { break }
            if delete(oldest) { deleted.append(oldest) }
        }
        return deleted
    }

    @discardableResult
    private func write(_ record: EventRecord) throws -> Int {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(record)
        try AtomicFile.write(data, to: recordPath(record.id))
        return data.count
    }

    private func fileSize(_ path: String) -> Int? { AtomicFile.size(of: path) }

    /// The file `<id>.mp4` names (nil: there is none).
    func clipFile(_ id: String) -> ClipFile? {
        var info = stat()
        guard stat(clipPath(id), &info) == 0 else { return nil }
        return ClipFile(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    // MARK: - Reads (any thread)

    /// A page of events, newest first, and the cursor of the next page (nil at the end).
    public func list(_ query: EventQuery) -> (events: [EventRecord], next: String?) {
        index.withLock { index in
            var found: [EventRecord] = []
            var ids = index.ordered[...]
            if let before = query.before, let cursor = index.entries[before]?.record {
                let end = index.ordered.partitioningIndex { !Self.older(index.entries[$0]!.record, cursor) }
                ids = index.ordered[..<end]
            } else if query.before != nil {
                return ([], nil)
            }
            for id in ids.reversed() {
                guard let record = index.entries[id]?.record, query.accepts(record) else { continue }
                if found.count == query.limit { return (found, found.last?.id) }
                found.append(record)
            }
            return (found, nil)
        }
    }

    public func record(_ id: String) -> EventRecord? {
        index.withLock { $0.entries[id]?.record }
    }

    /// The stored image, or nil when the event or the file is gone.
    public func image(_ id: String, crop: Bool) -> Data? {
        guard EventRecord.isValidID(id), record(id) != nil else { return nil }
        return FileManager.default.contents(atPath: crop ? cropPath(id) : snapshotPath(id))
    }

    public var totals: Totals {
        index.withLock { index in
            Totals(events: index.entries.count, open: index.entries.values.filter { $0.record.isOpen }.count,
                   bytes: index.bytes)
        }
    }

    /// Oldest first, for tests and tools.
    public var allIDs: [String] { index.withLock { $0.ordered } }

    static func older(_ a: EventRecord, _ b: EventRecord) -> Bool {
        a.startTime != b.startTime ? a.startTime < b.startTime : a.id < b.id
    }
}

extension Array {
    /// The first index whose element satisfies `belongsAfter` (the array is partitioned by it).
    func partitioningIndex(where belongsAfter: (Element) -> Bool) -> Int {
        var low = 0, high = count
        while low < high {
            let middle = (low + high) / 2
            if belongsAfter(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
