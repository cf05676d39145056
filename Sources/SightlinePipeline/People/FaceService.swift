import Foundation
import SightlineVision

/// What a naming or feedback call did.
public struct EnrollmentResult: Codable, Sendable, Equatable {
    public var id: Int
    public var name: String
    /// Crops learned by this call.
    public var learned: Int
    /// Samples the person now has.
    public var samples: Int
}

/// The part of face recognition the pipeline and the HTTP side share.
///
/// Threads and locks:
/// - The pipeline thread calls `process(_:frame:gray:at:)` once per frame
///   with the tracker's output. It aligns crops without any lock, keeps
///   near-frontal crops and per-track names under `stateLock` (held only for
///   dictionary work), and asks the recognizer under `modelLock` taken with
///   `try()`: when the service thread is busy learning or saving, the frame
///   keeps the names it had and recognition retries on the next frame, so
///   the pipeline never waits behind disk I/O.
/// - The HTTP side calls `name`, `feedback`, `people` and `removePerson`
///   on the request worker (`sightline.requests`, never the libwebsockets
///   thread); it takes `stateLock` to read crops, then `modelLock` to learn
///   and save. The two locks are never held together.
/// `@unchecked Sendable` by that discipline.
public final class FaceService: @unchecked Sendable {
    public struct Options: Sendable {
        /// A track is recognised again at most this often (seconds).
        public var recognitionInterval: TimeInterval = 0.5
        /// Faces turned further than this (degrees) are not recognised.
        public var maxRecognitionYaw = 30.0
        /// A track unseen this long (seconds) is forgotten, with its crops.
        public var trackRetention: TimeInterval = 5
        /// Crops a feedback call learns at most.
        public var feedbackCrops = 4

        public init() {}
    }

    public let options: Options
    private let aligner: FaceAligner

    private let stateLock = NSLock()
    private var buffer = EnrollmentBuffer()
    private var records: [Int: TrackRecord] = [:]
    /// Bumped whenever the model changes, so answers from an older model are dropped.
    private var modelGeneration = 0

    private let modelLock = NSLock()
    private let recognizer: FaceRecognizer
    private let storageFailures: StorageFailureReporter

    private struct TrackRecord {
        var lastSeen: TimeInterval
        var identity: FaceIdentity?
        var recognisedAt: TimeInterval = -.infinity
        var generation = -1
    }

    public init(recognizer: FaceRecognizer, options: Options = Options(), aligner: FaceAligner = FaceAligner(),
                storageFailures: StorageFailureReporter = StorageFailureReporter()) {
        self.recognizer = recognizer
        self.options = options
        self.aligner = aligner
        self.storageFailures = storageFailures
    }

    /// Loads (or starts) the people and model kept in `<data-dir>/faces/`.
    public convenience init(dataDirectory: String, options: Options = Options(),
                            recognizerOptions: FaceRecognizer.Options = FaceRecognizer.Options()) throws {
        let recognizer = try FaceRecognizer(options: recognizerOptions, store: PeopleStore(dataDirectory: dataDirectory))
        self.init(recognizer: recognizer, options: options)
    }

    // MARK: - Pipeline thread

    /// Keeps crops of near-frontal faces, recognises tracks that are due, and
    /// returns every face with its current name. `gray` is the frame in gray
    /// when the caller has it (saves a conversion); `time` in seconds.
    public func process(_ faces: [TrackedFace], frame: ImageBuffer, gray: ImageBuffer? = nil,
                        at time: TimeInterval) -> [IdentifiedFace] {
        let crops = alignedCrops(of: faces, frame: gray ?? frame)
        let (due, generation) = record(faces, crops: crops, at: time)
        let answers = recognise(due)
        return finish(faces, answers: answers, generation: generation, at: time)
    }

    private func alignedCrops(of faces: [TrackedFace], frame: ImageBuffer) -> [Int: ImageBuffer] {
        var crops: [Int: ImageBuffer] = [:]
        var gray: ImageBuffer?
        for face in faces where !face.isPredicted {
            guard let landmarks = face.observation.landmarks,
                  abs(face.observation.yaw ?? 0) <= options.maxRecognitionYaw else { continue }
            if gray == nil { gray = try? ImageOps.gray(frame) }
            guard let gray else { break }
            crops[face.id] = try? aligner.align(gray, landmarks: landmarks)
        }
        return crops
    }

    /// Under the state lock: notes the faces, keeps frontal crops, and picks the
    /// tracks whose recognition is due.
    private func record(_ faces: [TrackedFace], crops: [Int: ImageBuffer],
                        at time: TimeInterval) -> (due: [(Int, ImageBuffer)], generation: Int) {
        stateLock.lock()
        defer { stateLock.unlock() }
        var due: [(Int, ImageBuffer)] = []
        for face in faces {
            var record = records[face.id] ?? TrackRecord(lastSeen: time)
            record.lastSeen = time
            if let crop = crops[face.id] {
                buffer.offer(crop, trackID: face.id, yaw: face.observation.yaw, at: time)
                if record.generation != modelGeneration || time - record.recognisedAt >= options.recognitionInterval {
                    due.append((face.id, crop))
                }
            }
            records[face.id] = record
        }
        records = records.filter { time - $0.value.lastSeen <= options.trackRetention }
        buffer.removeAll(except: Set(records.keys))
        return (due, modelGeneration)
    }

    /// Asks the recognizer if it is free; an empty answer when it is busy.
    private func recognise(_ due: [(Int, ImageBuffer)]) -> [Int: FaceIdentity?] {
        guard !due.isEmpty, modelLock.try() else { return [:] }
        defer { modelLock.unlock() }
        var answers: [Int: FaceIdentity?] = [:]
        for (id, crop) in due { answers[id] = .some(try? recognizer.identify(crop)) }
        return answers
    }

    private func finish(_ faces: [TrackedFace], answers: [Int: FaceIdentity?], generation: Int,
                        at time: TimeInterval) -> [IdentifiedFace] {
        stateLock.lock()
        defer { stateLock.unlock() }
        if generation == modelGeneration {
            for (id, answer) in answers {
                records[id]?.identity = answer
                records[id]?.recognisedAt = time
                records[id]?.generation = generation
            }
        }
        return faces.map { IdentifiedFace(tracked: $0, identity: records[$0.id]?.identity) }
    }

    // MARK: - Service thread

    /// Learns the track's unlearned frontal crops under `name` (its recent
    /// learned ones when all were learned already, e.g. a renaming).
    public func name(trackID: Int, as name: String) -> Result<EnrollmentResult, FaceServiceError> {
        crops(of: trackID, limit: .max, includeLearned: true).flatMap { learn($0, trackID: trackID, as: name) }
    }

    /// Learns one face of a still picture (an event's stored best frame), aligned
    /// from its landmarks as live crops are, under `name`.
    public func name(picture: ImageBuffer, landmarks: FaceLandmarks, as name: String) -> Result<EnrollmentResult, FaceServiceError> {
        let crop: ImageBuffer
        do {
            crop = try aligner.align(try ImageOps.gray(picture), landmarks: landmarks)
        } catch {
            return .failure(.modelFailure(error))
        }
        return learn([crop], trackID: -1, as: name)
    }

    /// `correct: true` learns a few more crops under the track's current name;
    /// a `name` learns them under that name instead (a correction).
    public func feedback(trackID: Int, correct: Bool?, name: String?) -> Result<EnrollmentResult, FaceServiceError> {
        let target: String
        if let name {
            target = name
        } else if correct == true {
            guard let current = currentName(of: trackID) else {
                return .failure(knowsTrack(trackID) ? .nothingToConfirm(trackID) : .unknownTrack(trackID))
            }
            target = current
        } else {
            return .failure(FaceServiceError(status: 400, error: "nothing to learn",
                                             detail: "send {\"correct\": true} or {\"name\": \"Bob\"}"))
        }
        // A correction may reuse crops learned under the wrong name.
        return crops(of: trackID, limit: options.feedbackCrops, includeLearned: name != nil)
            .flatMap { learn($0, trackID: trackID, as: target) }
    }

    public func people() -> [PersonSummary] {
        modelLock.withLock { recognizer.people }
    }

    /// Forgets a person and retrains without their label.
    public func removePerson(named name: String) -> Result<String, FaceServiceError> {
        let result: Result<String, FaceServiceError> = modelLock.withLock {
            guard let canonical = recognizer.canonicalName(name) else { return .failure(.unknownPerson(name)) }
            do {
                try recognizer.remove(named: canonical)
                return .success(canonical)
            } catch {
                return .failure(failure(error, action: "cannot save the people without \(canonical)"))
            }
        }
        if case .success = result { stateLock.withLock { modelGeneration += 1 } }
        return result
    }

    /// A failed save of the people in words (counted and logged; the
    /// recognizer went back to what is saved); any other failure as the model's.
    private func failure(_ error: Error, action: String) -> FaceServiceError {
        guard let storage = storageFailures.report(error, area: .faces, action: action) else { return .modelFailure(error) }
        return FaceServiceError(status: storage.httpStatus, error: action, detail: "\(storage.reason); \(storage.reason.hint)")
    }

    /// Whether the id belongs to a face seen within the retention time.
    public func knowsTrack(_ id: Int) -> Bool { stateLock.withLock { records[id] != nil } }

    public func currentName(of id: Int) -> String? { stateLock.withLock { records[id]?.identity?.name } }

    private func crops(of trackID: Int, limit: Int, includeLearned: Bool) -> Result<[ImageBuffer], FaceServiceError> {
        stateLock.lock()
        defer { stateLock.unlock() }
        guard records[trackID] != nil else { return .failure(.unknownTrack(trackID)) }
        let fresh = buffer.unlearned(for: trackID, limit: limit)
        if !fresh.isEmpty || !includeLearned {
            return fresh.isEmpty && buffer.count(for: trackID) == 0 ? .failure(.noFrontalCrop(trackID)) : .success(fresh)
        }
        let any = buffer.recent(for: trackID, limit: limit)
        return any.isEmpty ? .failure(.noFrontalCrop(trackID)) : .success(any)
    }

    private func learn(_ crops: [ImageBuffer], trackID: Int, as name: String) -> Result<EnrollmentResult, FaceServiceError> {
        let result: Result<EnrollmentResult, FaceServiceError> = modelLock.withLock {
            let canonical = recognizer.canonicalName(name) ?? name
            do {
                let learned = crops.isEmpty ? 0 : try recognizer.enroll(crops, as: canonical)
                let samples = recognizer.people.first { $0.name == canonical }?.samples ?? 0
                return .success(EnrollmentResult(id: trackID, name: canonical, learned: learned, samples: samples))
            } catch {
                return .failure(failure(error, action: "cannot save what was learned"))
            }
        }
        if case .success = result {
            stateLock.withLock {
                buffer.markLearned(crops, trackID: trackID)
                modelGeneration += 1
            }
        }
        return result
    }
}
