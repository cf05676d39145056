import Foundation
import SightlineSupport
import Synchronization
import SightlineVision
import SightlinePipeline

/// "Name this person" from a face event, after the face has gone: finds the
/// face again in the event's stored best frame (the detector the server runs,
/// a second instance), aligns it as live recognition does, and learns it
/// under the name. While the event's track is still in view (or within the
/// face service's retention), its live crops are learned too. Live tracks of
/// that person are recognised again at once (the model's generation moves).
///
/// Threads: `name` runs on the request worker (`sightline.requests`), the
/// one thread that uses `detector`; the Mutex makes that checkable, not slow.
public final class EventNamer: Sendable {
    private let store: EventStore
    private let faces: FaceService
    private let makeDetector: @Sendable () throws -> FaceDetector
    private let detector = Locked<FaceDetector?>(nil)

    public init(store: EventStore, faces: FaceService, makeDetector: @escaping @Sendable () throws -> FaceDetector) {
        self.store = store
        self.faces = faces
        self.makeDetector = makeDetector
    }

    public struct Named: Encodable, Sendable {
        public var event: String
        public var name: String
        /// Samples learned from the stored frame and from the live track.
        public var learned: Int
        public var samples: Int
        public var fromLiveTrack: Bool
    }

    public func name(eventID id: String, as rawName: String) -> Result<Named, FaceServiceError> {
        guard let event = store.record(id) else {
            return .failure(FaceServiceError(status: 404, error: "no such event", detail: "\(id) (deleted, expired, or never stored)"))
        }
        guard event.kind == .face else {
            return .failure(FaceServiceError(status: 400, error: "not a face event",
                                             detail: "event \(id) is a \(event.label) appearance; only faces have names"))
        }
        guard let jpeg = store.image(id, crop: false), let picture = try? ImageIO.decode(jpeg) else {
            return .failure(FaceServiceError(status: 409, error: "no snapshot",
                                             detail: "event \(id) has no stored best frame to learn the face from"))
        }
        let found: Result<FaceLandmarks, FaceServiceError> = detector.withLock { held in
            do {
                if held == nil { held = try makeDetector() }
                let observations = try held!.detect(in: picture, gray: try ImageOps.gray(picture), limit: 100)
                let w = Double(picture.width), h = Double(picture.height)
                let scored = observations.compactMap { face -> (Double, FaceLandmarks)? in
                    guard let landmarks = face.landmarks else { return nil }
                    let box = NormalizedBox(x: face.box.x / w, y: face.box.y / h, w: face.box.w / w, h: face.box.h / h)
                    return (box.intersectionOverUnion(event.best.box), landmarks)
                }
                guard let best = scored.max(by: { $0.0 < $1.0 }), best.0 >= 0.3 else {
                    return .failure(FaceServiceError(status: 422, error: "face not found again",
                                                     detail: "no face with landmarks at the event's box in its snapshot (\(observations.count) found elsewhere)"))
                }
                return .success(best.1)
            } catch {
                return .failure(.modelFailure(error))
            }
        }
        return found.flatMap { landmarks in
            faces.name(picture: picture, landmarks: landmarks, as: rawName).map { result in
                var learned = result.learned
                var samples = result.samples
                var live = false
                if let track = event.trackId, faces.knowsTrack(track), case .success(let more) = faces.name(trackID: track, as: result.name) {
                    learned += more.learned
                    samples = more.samples
                    live = true
                }
                return Named(event: id, name: result.name, learned: learned, samples: samples, fromLiveTrack: live)
            }
        }
    }
}
