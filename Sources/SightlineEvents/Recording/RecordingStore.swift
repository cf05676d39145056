import Foundation
import Synchronization
import SightlineVision
import SightlineSupport
import SightlinePipeline

/// Continuous recording's segments on disk, in `<data-dir>/recordings/`:
/// each a fragmented MP4 named by its first frame's capture time. While
/// written it is `<start>.mp4`; once finished it is renamed
/// `<start>_<milliseconds>.mp4`, so its length is known without reading
/// it. A segment left unfinished by a crash keeps its name and what it
/// holds (it plays to its last fragment); `load` measures it once.
/// Retention deletes oldest first beyond `maxAgeSeconds` or `maxBytes`.
///
/// Threads: `load` on the main thread; `add`, `finish` and retention on the
/// recorder's thread; `list`, `segments(overlapping:)` and `path` on any.
/// The index is in a `Mutex`, held only for memory work.
public final class RecordingStore: Sendable {
    public struct Limits: Sendable, Equatable {
        public var maxAgeSeconds: Double
        public var maxBytes: Int64

        public init(maxAgeSeconds: Double, maxBytes: Int64) {
            self.maxAgeSeconds = maxAgeSeconds
            self.maxBytes = maxBytes
        }
    }

    /// One segment as `GET /api/recordings` lists it.
    public struct Segment: Codable, Sendable, Equatable {
        /// Its file name, and its id in `/api/recordings/{name}`.
        public var name: String
        /// Unix seconds of its first frame's capture.
        public var start: Double
        public var duration: Double
        public var bytes: Int64
        /// False while written, and for one a crash cut short.
        public var complete: Bool
    }

    public let directory: String
    public let limits: Limits
    private let index = Locked<[Segment]>([])

    public init(dataDirectory: String, limits: Limits) {
        directory = (dataDirectory as NSString).appendingPathComponent("recordings")
        self.limits = limits
    }

    public func path(_ name: String) -> String { (directory as NSString).appendingPathComponent(name) }

    /// `<start>.mp4` or `<start>_<ms>.mp4`, start with three decimals.
    public static func parse(_ name: String) -> (start: Double, milliseconds: Int?)? {
        guard name.hasSuffix(".mp4"), name.count <= 40 else { return nil }
        let stem = name.dropLast(4)
        let parts = stem.split(separator: "_", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count) else { return nil }
        let time = parts[0].split(separator: ".", omittingEmptySubsequences: false)
        guard time.count == 2, time[1].count == 3, (1...12).contains(time[0].count),
              time.allSatisfy({ $0.allSatisfy(\.isASCIIDigitCharacter) }), let start = Double(parts[0]) else { return nil }
        guard parts.count == 2 else { return (start, nil) }
        guard (1...9).contains(parts[1].count), parts[1].allSatisfy(\.isASCIIDigitCharacter), let ms = Int(parts[1]) else {
            return nil
        }
        return (start, ms)
    }

    static func name(start: Double, milliseconds: Int? = nil) -> String {
        String(format: "%.3f", start) + (milliseconds.map { "_\($0)" } ?? "") + ".mp4"
    }

    /// Reads the directory (main thread, before recording starts). Files of
    /// other names are left alone; an unfinished segment is measured, and
    /// removed when nothing in it plays. Returns how many were cut short.
    @discardableResult
    public func load(now: Double = Date().timeIntervalSince1970) throws -> Int {
        try AtomicFile.makeDirectory(directory)
        var found: [Segment] = []
        var cut = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
            guard let (start, ms) = Self.parse(name) else { continue }
            let bytes = Self.size(path(name))
            if let ms {
                found.append(Segment(name: name, start: start, duration: Double(ms) / 1000, bytes: bytes, complete: true))
            } else if let probe = try? VideoFileProbe.read(path(name)), probe.keyframes > 0 {
                found.append(Segment(name: name, start: start, duration: probe.duration.rounded(toPlaces: 3),
                                     bytes: bytes, complete: false))
                cut += 1
            } else {
                unlink(path(name))
            }
        }
        found.sort { $0.start < $1.start }
        index.withLock { $0 = found }
        enforceRetention(now: now)
        return cut
    }

    /// A segment begun (recorder thread).
    func add(_ segment: Segment) {
        index.withLock { index in
            index.removeAll { $0.name == segment.name }
            index.append(segment)
        }
    }

    /// Its size and length as written so far (recorder thread).
    func progress(_ name: String, duration: Double, bytes: Int64) {
        index.withLock { index in
            guard let i = index.firstIndex(where: { $0.name == name }) else { return }
            index[i].duration = duration.rounded(toPlaces: 3)
            index[i].bytes = bytes
        }
    }

    /// A segment closed whole: renamed with its length (recorder thread).
    func finish(_ name: String, duration: Double) throws {
        guard let (start, _) = Self.parse(name) else { return }
        let final = Self.name(start: start, milliseconds: Int((duration * 1000).rounded()))
        guard rename(path(name), path(final)) == 0 else { throw StorageError(errno: errno, path: "") }
        let bytes = Self.size(path(final))
        index.withLock { index in
            guard let i = index.firstIndex(where: { $0.name == name }) else { return }
            index[i] = Segment(name: final, start: start, duration: duration, bytes: bytes, complete: true)
        }
    }

    /// A segment that could not be written at all (recorder thread).
    func discard(_ name: String) {
        unlink(path(name))
        index.withLock { $0.removeAll { $0.name == name } }
    }

    /// Deletes oldest first (never the one being written: the newest) until
    /// the limits hold; returns the names deleted.
    @discardableResult
    func enforceRetention(now: Double = Date().timeIntervalSince1970) -> [String] {
        var deleted: [String] = []
        while true {
            let oldest = index.withLock { index -> String? in
                guard index.count > 1, let first = index.first else { return nil }
                let total = index.reduce(Int64(0)) { $0 + $1.bytes }
                let tooOld = now - (first.start + first.duration) > limits.maxAgeSeconds
                guard tooOld || total > limits.maxBytes else { return nil }
                index.removeFirst()
                return first.name
            }
            guard let oldest else { break }
            unlink(path(oldest))
            deleted.append(oldest)
        }
        return deleted
    }

    // MARK: - Reads (any thread)

    /// Segments overlapping [from, to] (nil: open), oldest first.
    public func list(from: Double? = nil, to: Double? = nil) -> [Segment] {
        index.withLock { index in
            index.filter { segment in
                (from.map { segment.start + segment.duration >= $0 } ?? true) && (to.map { segment.start <= $0 } ?? true)
            }
        }
    }

    public func segment(named name: String) -> Segment? {
        index.withLock { $0.first { $0.name == name } }
    }

    public var totalBytes: Int64 { index.withLock { $0.reduce(0) { $0 + $1.bytes } } }

    static func size(_ path: String) -> Int64 { Int64(AtomicFile.size(of: path) ?? 0) }
}
