import Foundation

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
/// name, which recognition treats as unknown.
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
        let index = try JSONDecoder().decode(PeopleIndex.self, from: data)
        if FileManager.default.fileExists(atPath: modelPath) {
            try model.load(from: modelPath)
        }
        return index
    }

    func save(_ index: PeopleIndex, model: LBPHModel) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if model.sampleCount > 0 {
            try saveModel(model)
        } else if FileManager.default.fileExists(atPath: modelPath) {
            try FileManager.default.removeItem(atPath: modelPath)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try AtomicFile.write(try encoder.encode(index), to: indexPath)
    }

    /// The shim writes a temporary file (keeping the extension OpenCV reads
    /// the format from) that is then renamed over the old model.
    private func saveModel(_ model: LBPHModel) throws {
        let temporary = (directory as NSString).appendingPathComponent("lbph-model.tmp-\(getpid()).yml.gz")
        do {
            try model.save(to: temporary)
        } catch {
            unlink(temporary)
            throw error
        }
        guard rename(temporary, modelPath) == 0 else {
            let why = String(cString: strerror(errno))
            unlink(temporary)
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: modelPath, NSLocalizedDescriptionKey: why])
        }
    }
}
