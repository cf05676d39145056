import Foundation

/// Who a face crop looks like.
public struct FaceIdentity: Sendable, Equatable {
    /// nil when the nearest person is too far away ("unknown").
    public var name: String?
    /// 0...1, from the LBPH distance to the nearest person's sample.
    public var confidence: Double
    /// The raw LBPH chi-square distance (smaller is closer).
    public var distance: Double
}

/// One person as `GET /api/people` lists them.
public struct PersonSummary: Codable, Sendable, Equatable {
    public var name: String
    public var samples: Int
}

/// Names faces with OpenCV's LBPH recognizer: enroll aligned gray crops
/// under a name, predict a name with a confidence, learn from feedback,
/// forget a person, persist in the data directory.
///
/// Thread ownership: not thread-safe; FaceService calls it under its model lock.
public final class FaceRecognizer {
    public struct Options: Sendable {
        /// Distances above this are "unknown" (no name). Measured on the test
        /// photos (aligned 100x100 crops, 8x8 grid): the same person 30...76,
        /// strangers 89...104.
        public var unknownDistance = 80.0
        /// Confidence falls linearly from 1 at distance 0 to 0 at this distance;
        /// at `unknownDistance` it is 1 - 80/160 = 0.5.
        public var zeroConfidenceDistance = 160.0
        /// A person keeps at most this many samples (bounds prediction time).
        public var maxSamplesPerPerson = 60
        public var parameters = LBPHModel.Parameters()

        public init() {}
    }

    public let options: Options
    private var model: LBPHModel
    private let store: PeopleStore?
    private var index = PeopleIndex()

    /// An in-memory recognizer when `store` is nil; otherwise loads what the
    /// store holds.
    public init(options: Options = Options(), store: PeopleStore?) throws {
        self.options = options
        self.store = store
        model = try LBPHModel(parameters: options.parameters)
        if let store { index = try store.load(into: model) }
    }

    public var people: [PersonSummary] {
        let labels = model.sampleLabels
        return index.people
            .map { entry in PersonSummary(name: entry.name, samples: labels.lazy.filter { $0 == entry.label }.count) }
            .sorted { $0.name.localizedCaseInsensitiveCompare($1.name) == .orderedAscending }
    }

    public func knows(_ name: String) -> Bool { index.entry(named: name) != nil }

    /// The stored spelling of a known name.
    public func canonicalName(_ name: String) -> String? { index.entry(named: name)?.name }

    /// Learns crops under `name` (adding the person if new) and saves.
    /// Returns how many crops were added (fewer when the person is full).
    @discardableResult
    public func enroll(_ crops: [ImageBuffer], as name: String) throws -> Int {
        let label = index.labelAdding(name)
        let existing = model.sampleLabels.lazy.filter { $0 == label }.count
        let room = max(0, options.maxSamplesPerPerson - existing)
        let taken = Array(crops.suffix(room))
        try model.update(crops: taken, labels: Array(repeating: label, count: taken.count))
        try save()
        return taken.count
    }

    /// The nearest person for an aligned crop; nil when nobody is enrolled.
    public func identify(_ crop: ImageBuffer) throws -> FaceIdentity? {
        guard let (label, distance) = try model.predict(crop) else { return nil }
        let confidence = min(1, max(0, 1 - distance / options.zeroConfidenceDistance))
        let name = distance <= options.unknownDistance ? index.name(for: label) : nil
        return FaceIdentity(name: name, confidence: confidence, distance: distance)
    }

    /// Forgets a person: their samples leave the model. False when unknown.
    @discardableResult
    public func remove(named name: String) throws -> Bool {
        guard let entry = index.entry(named: name) else { return false }
        try model.remove(label: entry.label)
        _ = index.remove(named: name)
        try save()
        return true
    }

    /// Saves the index and model; when that fails (a full disk), goes back
    /// to what the store holds, so what was not saved is not used either
    /// and the caller's error is the whole truth.
    private func save() throws {
        guard let store else { return }
        do {
            try store.save(index, model: model)
        } catch {
            if let fresh = try? LBPHModel(parameters: options.parameters), let saved = try? store.load(into: fresh) {
                model = fresh
                index = saved
            }
            throw error
        }
    }
}
