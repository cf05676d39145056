import Foundation
import SightlineSupport
import SightlineVision
import SightlinePipeline
import SightlineHTTP
import SightlineEvents

/// Events and their snapshots (config `events.*`), kept apart from runtime state.
public struct EventSettings: Sendable, Equatable {
    /// false: no events, no snapshots, no MQTT (the events sink is not built).
    public var enabled = true
    /// Appearances shorter than this are not events.
    public var minSeconds = 0.5
    /// An event ends once its thing has been absent this long.
    public var endAfterSeconds = 2.0
    /// An open event is updated at least this often while in view ...
    public var updateSeconds = 5.0
    /// ... and on a change of label, name or best score, at most this often.
    public var minUpdateSeconds = 1.0
    /// Retention of <data-dir>/events: oldest deleted first beyond any of these.
    public var maxEvents = 1000
    public var maxAgeDays = 30.0
    public var maxMegabytes = 500.0
    /// A clip (fragmented MP4 with the SEI boxes) per event; needs `video.h264`.
    /// The encoder then runs whenever the server runs, watched or not.
    public var clips = true
    /// Video kept before an event's first frame and after its last.
    public var preCaptureSeconds = 3.0
    public var postCaptureSeconds = 3.0
    /// A clip stops here while its event goes on (`capped`).
    public var maxClipSeconds = 300.0

    public init() {}

    public var clipOptions: ClipRecorder.Options {
        var options = ClipRecorder.Options()
        options.preCapture = preCaptureSeconds
        options.postCapture = postCaptureSeconds
        options.maxSeconds = maxClipSeconds
        options.eventDelay = minSeconds
        return options
    }

    public func trackerOptions(camera: String) -> EventTracker.Options {
        var options = EventTracker.Options()
        options.camera = camera
        options.minSeconds = minSeconds
        options.endAfterSeconds = endAfterSeconds
        options.updateSeconds = updateSeconds
        options.minUpdateSeconds = minUpdateSeconds
        return options
    }

    public var limits: EventStore.Limits {
        var limits = EventStore.Limits()
        limits.maxEvents = maxEvents
        limits.maxAgeSeconds = maxAgeDays * 86_400
        limits.maxBytes = Int(maxMegabytes * 1_048_576)
        return limits
    }
}
