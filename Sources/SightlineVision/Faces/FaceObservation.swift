import Foundation

/// A point in frame pixels.
public struct PixelPoint: Sendable, Equatable, Codable {
    public var x: Double
    public var y: Double
    public init(x: Double, y: Double) { self.x = x; self.y = y }

    /// The straight-line distance to `other`, in pixels.
    public func distance(to other: PixelPoint) -> Double { hypot(x - other.x, y - other.y) }
}

/// The five landmarks, named from the subject's point of view (`rightEye`
/// is on the image's left for an unmirrored camera), in frame pixels.
public struct FaceLandmarks: Sendable, Equatable, Codable {
    public var rightEye: PixelPoint
    public var leftEye: PixelPoint
    public var nose: PixelPoint?
    public var mouthRight: PixelPoint?
    public var mouthLeft: PixelPoint?

    public init(rightEye: PixelPoint, leftEye: PixelPoint, nose: PixelPoint? = nil,
                mouthRight: PixelPoint? = nil, mouthLeft: PixelPoint? = nil) {
        self.rightEye = rightEye; self.leftEye = leftEye; self.nose = nose
        self.mouthRight = mouthRight; self.mouthLeft = mouthLeft
    }
}

/// One face a detector found in one frame, in frame pixels.
/// `box` is the face's own rectangle, centred on the face (x, y top-left of
/// the unrotated box; a client draws it rotated by `roll` about its centre).
public struct FaceObservation: Sendable, Equatable {
    public var box: PixelRect<Double>
    public var score: Double
    public var landmarks: FaceLandmarks?
    /// Degrees, clockwise positive in image coordinates, in (-180, 180].
    public var roll: Double?
    /// Degrees in [-90, 90], positive when the face turns towards the image's right.
    public var yaw: Double?
    public var smile: Double?
    public var eyesClosed: Bool?

    public init(box: PixelRect<Double>, score: Double, landmarks: FaceLandmarks? = nil,
                roll: Double? = nil, yaw: Double? = nil, smile: Double? = nil, eyesClosed: Bool? = nil) {
        self.box = box; self.score = score; self.landmarks = landmarks
        self.roll = roll; self.yaw = yaw; self.smile = smile; self.eyesClosed = eyesClosed
    }

    public static func == (a: FaceObservation, b: FaceObservation) -> Bool {
        a.box == b.box && a.score == b.score && a.landmarks == b.landmarks && a.roll == b.roll && a.yaw == b.yaw
            && a.smile == b.smile && a.eyesClosed == b.eyesClosed
    }
}

/// Finds faces in a frame. Implementations (YuNet, Haar) belong to the one
/// thread that calls them (live: the face worker's `sightline.faces`
/// thread; `detect`: the main thread) and may keep buffers between frames.
public protocol FaceDetector: AnyObject {
    /// A short name for logs and /api/state ("yunet-320", "haar").
    var name: String { get }
    /// Faces in a BGR frame (with its gray version, which Haar uses), at most `limit`.
    func detect(in frame: ImageBuffer, gray: ImageBuffer?, limit: Int) throws -> [FaceObservation]
    /// The same, given the faces already tracked, moved to this frame's time
    /// (`hints`): a detector may start from what they know (YuNet starts its
    /// second landmark pass from a face's tracked roll). Never required for
    /// correctness, only for speed. `fine` (nil for the usual pass) asks for
    /// a pass that also finds faces too small or tilted for the usual one
    /// (YuNet: the frame at up to 640 pixels on its long side rather than
    /// 320, looking for the `fine`-th of its tilts; about four times the
    /// cost); it counts the fine passes on the picture, from 0.
    func detect(in frame: ImageBuffer, gray: ImageBuffer?, limit: Int, hints: [FaceObservation], fine: Int?) throws
        -> [FaceObservation]
    /// The same, given also a smaller copy of the frame (the picture the
    /// other stages analyse), which a frame-wide pass may read instead where
    /// it holds every pixel that pass would take from the frame (YuNet: a
    /// 640x360 copy serves its 320 and 640 passes over a 1080p frame), so
    /// the frame itself is read only around faces. Faces are in frame pixels.
    func detect(in frame: ImageBuffer, smaller: ImageBuffer?, gray: ImageBuffer?, limit: Int,
                hints: [FaceObservation], fine: Int?) throws -> [FaceObservation]
    /// Whether someone watches the faces of the passes that follow live (a
    /// viewer, a relay, a broker) or only events follow them: a detector may
    /// look at single faces less often then (YuNet: its landmark re-reads and
    /// smile and eyes readings). Called on the detecting thread before a pass.
    func pace(watchedLive: Bool)
    /// Where the last pass's time went, part by part (nil: the detector
    /// times no parts). Read on the detecting thread after a pass.
    var lastPassProfile: FacePassProfile? { get }
}

extension FaceDetector {
    /// Detectors that pace nothing by who watches ignore it.
    public func pace(watchedLive: Bool) {}

    /// Detectors that time no parts.
    public var lastPassProfile: FacePassProfile? { nil }

    /// Detectors that have no use for a smaller copy ignore it.
    public func detect(in frame: ImageBuffer, smaller: ImageBuffer?, gray: ImageBuffer?, limit: Int,
                       hints: [FaceObservation], fine: Int?) throws -> [FaceObservation] {
        try detect(in: frame, gray: gray, limit: limit, hints: hints, fine: fine)
    }

    /// Detectors that have no use for hints or a finer pass ignore them.
    public func detect(in frame: ImageBuffer, gray: ImageBuffer?, limit: Int, hints: [FaceObservation], fine: Int?)
        throws -> [FaceObservation] {
        try detect(in: frame, gray: gray, limit: limit)
    }

    /// The usual pass, given the tracked faces.
    public func detect(in frame: ImageBuffer, gray: ImageBuffer?, limit: Int, hints: [FaceObservation]) throws
        -> [FaceObservation] {
        try detect(in: frame, gray: gray, limit: limit, hints: hints, fine: nil)
    }
}
