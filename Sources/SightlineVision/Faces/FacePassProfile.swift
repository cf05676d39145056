import Foundation
import SightlineSupport

/// What one detection pass did and where its time went, part by part
/// (`YuNetDetector.lastPass`; `sightline bench --faces` sums them). Seconds
/// are measured on the monotonic clock around each part.
public struct FacePassProfile: Sendable, Equatable, Codable {
    /// Frame-wide passes: letterbox, forward pass, decoding and NMS (the
    /// usual pass, a fine one, the rotation fallback's).
    public var detectSeconds = 0.0
    /// Crops of single faces: confirming missed tracks, live landmark
    /// re-reads, the still photo's full second pass.
    public var cropSeconds = 0.0
    /// The person check of new faces (each one's upright crop and HOG look).
    public var personCheckSeconds = 0.0
    /// Smile and eyes readings (each one's upright crop, 68-point fit and eye looks).
    public var attributeSeconds = 0.0
    /// The upright crops of the person check and the attribute readings
    /// (part of `personCheckSeconds` and `attributeSeconds`).
    public var uprightCropSeconds = 0.0

    /// Reading the pass's picture: a frame's pixels at the size the pass
    /// reads (`FaceDetectionWorker.Input`), before the detector starts.
    /// Set by the worker, not the detector.
    public var readSeconds = 0.0

    /// Whether a fine pass ran.
    public var finePass = false
    /// Missed tracks a confirming crop found again.
    public var confirmations = 0
    /// Faces whose landmarks a crop read (confirmations not counted).
    public var rereads = 0
    /// New faces the person check looked at, and those it refused.
    public var personChecks = 0
    public var refused = 0
    /// Faces read for smile and eyes.
    public var attributeReads = 0
    /// Forward passes of the network on single-face crops (confirmations and re-reads).
    public var cropForwards = 0

    public init() {}

    /// The whole pass's measured seconds (`uprightCropSeconds` is counted in its parts).
    public var seconds: Double { readSeconds + detectSeconds + cropSeconds + personCheckSeconds + attributeSeconds }

    /// A detector that times no parts (Haar): the whole pass is its detection.
    public init(wholePass seconds: Double) {
        detectSeconds = seconds
    }

    /// Runs `body`, adding its time to the part at `part`.
    package mutating func timed<T>(_ part: WritableKeyPath<FacePassProfile, Double>, _ body: () throws -> T) rethrows -> T {
        let start = MonotonicClock.nanos()
        defer { self[keyPath: part] += Double(MonotonicClock.nanos() - start) / 1e9 }
        return try body()
    }
}
