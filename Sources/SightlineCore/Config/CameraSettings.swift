import Foundation
import SightlineVision
import SightlineSupport
import SightlinePipeline
import SightlineHTTP
import SightlineEvents

/// A camera's own settings (`SettingsCatalog`'s `.camera` scope): its
/// source, demo, templates, faces, analysis size, events, relays and name.
/// The top level's are every camera's defaults; a camera of `cameras:` sets
/// its own over them and can set nothing else (no host, port or token).
public struct CameraSettings: Sendable {
    public var source = "auto"
    public var cameraWidth = 640
    public var cameraHeight = 480
    public var cameraFPS = 30.0
    public var demoTemplate = "config/demo-template.png"
    public var templateThreshold = TemplateMatcher.Options.defaultThreshold
    public var frameScale = TemplateMatcher.Options().frameScale
    /// Level where coarse hits are refined (nil: no refinement; `bench --refine-scale`).
    public var refineScale = TemplateMatcher.Options().refineScale
    public var templates: [String] = []
    /// Rotation search: ± this many degrees in `rotationStep` steps (0: off).
    public var rotationRange = 0.0
    public var rotationStep = 5.0
    /// Most places one template is reported at in a frame.
    public var maxInstances = 1
    /// Further sources offered in the browser's selector (GET /api/sources).
    public var offeredSources: [String] = []
    /// Relays the H.264 stream is published to (`publish:`, `--publish`; PublishTarget).
    public var publish: [String] = []
    public var facesEnabled = true
    /// YuNet ONNX model; nil runs the Haar fallback.
    public var faceModel: String?
    /// `faces.runtime`: a `YuNetRuntime` (auto, onnxruntime, opencv).
    public var faceRuntime = YuNetRuntime.auto.rawValue
    /// `faceRuntime` as the detector takes it (the catalog's rule admits only its cases).
    public var yunetRuntime: YuNetRuntime { YuNetRuntime(rawValue: faceRuntime) ?? .auto }
    public var maxFaces = 10
    /// Offer every this many frames to the face detector (tracks carry boxes between).
    public var faceDetectEvery = 1
    /// Only look for faces in this normalized rectangle.
    public var faceRegion: NormalizedBox?
    /// Frames larger than this (longest side, pixels) are analysed (templates,
    /// faces) on a copy scaled down to it; boxes stay normalized to the full
    /// picture. 0: every frame at its own size. Why 640: `AnalysisSize`.
    public var analysisSize = AnalysisSize.defaultLongSide
    /// YuNet: a second landmark pass on upscaled crops for an accurate roll
    /// (costs detection rate, not frames: detection runs beside the pipeline).
    public var faceRefineLandmarks = true
    /// Boxes move with the picture between passes (optical flow), not by their velocity.
    public var faceOpticalFlow = true
    /// Detection passes a second at most, and on a still scene or with nobody watching (FaceDetectionPolicy).
    public var faceMaxRate = 10.0
    public var faceIdleRate = 2.0
    /// Seconds between fine face passes (small and tilted faces; FaceDetectionPolicy); 0: only after cuts.
    public var faceFineEverySeconds = 1.0
    /// YuNet: each tracked face's landmarks are re-read at most this often (new faces at once).
    public var faceRefineEverySeconds = 0.1
    /// YuNet: side of a tracked face's refining crop (160-320, a multiple of
    /// 32): smaller is cheaper (a 320 crop costs 4 times a 160 one) and reads roll less well.
    public var faceRefineCropSize = 320
    /// Each tracked face's smile and eyes are read at most this often.
    public var faceAttributesEverySeconds = 0.25
    /// YuNet: the least score (0-1) a face needs to be reported.
    public var faceMinScore = 0.75
    /// Names this server in events and MQTT topics; nil: from the host name (`cameraName`).
    public var camera: String?
    public var events = EventSettings()

    public init() {}

    /// The matcher's options from these settings.
    public var matcherOptions: TemplateMatcher.Options {
        var options = TemplateMatcher.Options()
        options.frameScale = frameScale
        options.refineScale = refineScale
        options.angles = TemplateMatcher.Options.angles(range: rotationRange, step: rotationStep)
        options.maxInstances = maxInstances
        return options
    }
}
