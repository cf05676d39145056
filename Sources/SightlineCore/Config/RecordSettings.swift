import Foundation
import SightlineSupport
import SightlinePipeline
import SightlineEvents

/// Continuous recording (config `record.*`), off by default: the main H.264
/// rendition, SEI boxes included, as fragmented MP4 segments in
/// `<data-dir>/recordings`, oldest deleted first beyond either limit.
public struct RecordSettings: Sendable, Equatable {
    public var enabled = false
    /// A segment ends at the first keyframe this long after its start.
    public var segmentSeconds = 60.0
    public var maxAgeHours = 72.0
    public var maxGigabytes = 20.0

    public init() {}

    public var limits: RecordingStore.Limits {
        RecordingStore.Limits(maxAgeSeconds: maxAgeHours * 3600, maxBytes: Int64(maxGigabytes * 1_073_741_824))
    }
}
