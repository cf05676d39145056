import CZlib
import Foundation
import SightlineSupport

/// Who the recognizer knows: names and their LBPH labels.
public struct PeopleIndex: Codable, Sendable, Equatable {
    public static let currentVersion = 1
    public var version = PeopleIndex.currentVersion
    /// The next label to hand out; labels are never reused, so samples left
    /// in a model from an older index can never be mistaken for a new person.
    public var nextLabel: Int32 = 1
    public var people: [Entry] = []

    public struct Entry: Codable, Sendable, Equatable {
        public var name: String
        public var label: Int32
    }

    public init() {}

    public func label(for name: String) -> Int32? { entry(named: name)?.label }

    public func name(for label: Int32) -> String? { people.first { $0.label == label }?.name }

    /// Names compare case-insensitively, so "ada" adds to "Ada".
    public func entry(named name: String) -> Entry? {
        people.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }
    }

    /// The existing label for `name`, or a new one.
    public mutating func labelAdding(_ name: String) -> Int32 {
        if let label = label(for: name) { return label }
        let label = nextLabel
        nextLabel += 1
        people.append(Entry(name: name, label: label))
        return label
    }

    public mutating func remove(named name: String) -> Entry? {
        guard let entry = entry(named: name) else { return nil }
        people.removeAll { $0.label == entry.label }
        return entry
    }
}

/// Where the people index and the LBPH model live: `<data-dir>/faces/`,
/// `people.json` and `lbph-model.yml.gz`. Both files are written whole or
/// not at all (temporary file, then rename), the model first, so a crash
/// between the two leaves at worst samples whose label the index does not
/// name, which recognition treats as unknown (and whose label `load` never
/// hands out again). A write that fails throws a `StorageError`.
///
/// A value type; its owner (FaceRecognizer) calls it under its lock.
public struct PeopleStore: Sendable {
    public let directory: String
    static let folderName = "faces"
    static let indexFileName = "people.json"
    /// OpenCV's FileStorage picks the format from the extension; gzip keeps
    /// the histograms (16384 floats a sample) small on disk.
    static let modelFileName = "lbph-model.yml.gz"

    public init(dataDirectory: String) {
        directory = (dataDirectory as NSString).appendingPathComponent(Self.folderName)
    }

    public var indexPath: String { (directory as NSString).appendingPathComponent(Self.indexFileName) }
    public var modelPath: String { (directory as NSString).appendingPathComponent(Self.modelFileName) }

    /// Reads the index and fills `model` from the model file; an empty index
    /// when nothing was saved yet.
    func load(into model: LBPHModel) throws -> PeopleIndex {
        guard let data = FileManager.default.contents(atPath: indexPath) else { return PeopleIndex() }
        var index = try JSONDecoder().decode(PeopleIndex.self, from: data)
        if FileManager.default.fileExists(atPath: modelPath) {
            try model.load(from: modelPath)
        }
        // Samples saved under a label the index never recorded (the index
        // write failed after the model's) keep their label out of use.
        if let highest = model.sampleLabels.max(), highest >= index.nextLabel { index.nextLabel = highest + 1 }
        return index
    }

    func save(_ index: PeopleIndex, model: LBPHModel) throws {
        try AtomicFile.makeDirectory(directory)
        if model.sampleCount > 0 {
            try saveModel(model)
        } else if unlink(modelPath) != 0 && errno != ENOENT {
            throw StorageError(errno: errno, path: modelPath)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try AtomicFile.write(try encoder.encode(index), to: indexPath)
    }

    /// The shim writes a temporary file (keeping the extension OpenCV reads
    /// the format from) that is then renamed over the old model.
    ///
    /// OpenCV's FileStorage does not check its writes (`gzputs`, `gzclose`):
    /// on a full disk it returns as if all went well and leaves the file cut
    /// short. So the file is read back whole before it replaces the model,
    /// and when it is not, a small write in the directory says why.
    private func saveModel(_ model: LBPHModel) throws {
        let temporary = (directory as NSString).appendingPathComponent("lbph-model.tmp-\(getpid()).yml.gz")
        var whole = false
        do {
            try model.save(to: temporary)
            whole = Self.isWholeGzip(temporary)
        } catch {
            whole = false
        }
        if !whole {
            unlink(temporary)
            throw AtomicFile.probe(directory: directory) ?? StorageError(reason: .incomplete, path: modelPath)
        }
        var failure: Int32 = 0
        let fd = open(temporary, O_RDONLY | O_CLOEXEC)
        if fd < 0 || fsync(fd) != 0 { failure = errno }
        if fd >= 0 { close(fd) }
        if failure == 0 && rename(temporary, modelPath) != 0 { failure = errno }
        if failure != 0 {
            unlink(temporary)
            throw StorageError(errno: failure, path: modelPath)
        }
    }

    /// Whether `path` holds a gzip stream that inflates to its end (zlib
    /// reports a stream cut short as an error, or on closing it).
    static func isWholeGzip(_ path: String) -> Bool {
        guard let file = gzopen(path, "rb") else { return false }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var total = 0
        while true {
            let read = buffer.withUnsafeMutableBytes { gzread(file, $0.baseAddress, UInt32($0.count)) }
            if read < 0 {
                gzclose(file)
                return false
            }
            if read == 0 { break }
            total += Int(read)
        }
        let compressed = gzdirect(file) == 0
        return gzclose(file) == Z_OK && compressed && total > 0
    }
}
