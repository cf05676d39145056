import Foundation
import SightlineSupport

/// H.264 for `/ws?video=h264` (config `video:`): the encoder's rate control,
/// keyframe interval and preset, and the `low` rendition a viewer on a slow
/// link is moved to.
public struct VideoSettings: Sendable, Equatable {
    /// Off: `/ws?video=h264` is refused (400) and nothing is ever encoded.
    public var h264Enabled = true
    /// The main rendition (the frame's own size).
    public var encoder = H264Encoder.Settings()
    /// A second, smaller rendition for viewers who fall behind on `main`
    /// (encoded only while one is on it); off: slow viewers stay on `main`
    /// and are moved ahead to keyframes.
    public var lowEnabled = true
    /// The low rendition: this fraction of each side (made even), at most
    /// this many frames a second, at this average bitrate.
    public var lowScale = 0.5
    public var lowMaxFPS = 15.0
    public var lowBitrateKbps = 400
    /// A viewer whose next frame is older than this behind the newest is moved
    /// ahead to the next keyframe (and one is asked for).
    public var maxLagSeconds = 0.5
    /// Keyframes forced for viewers (joining, moved ahead) come at most this often per rendition.
    public var forcedKeyframeGapSeconds = 0.25
    /// Files and streams that deliver H.264 hand their own access units to
    /// the main rendition (and MJPEG ones their JPEGs to JPEG viewers)
    /// instead of having them encoded again (`SourceVideoRelay`).
    public var passThrough = true

    public init() {}

    /// The low rendition's encoder settings.
    public var lowEncoder: H264Encoder.Settings {
        var low = encoder
        low.bitrateKbps = lowBitrateKbps
        return low
    }
}
