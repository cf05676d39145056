import Foundation

/// An event's clip as its JSON says it (`clip`): the video from pre-capture
/// before its first frame to post-capture after its last, in
/// `<data-dir>/events/<id>.mp4` (fragmented MP4, H.264 with the Sightline
/// SEI boxes in every frame). Absent when the event has no clip.
public struct ClipInfo: Codable, Sendable, Equatable {
    /// Unix seconds of the capture of the clip's first frame (a keyframe).
    public var start: Double
    /// Seconds of video written so far.
    public var duration: Double
    /// The file's size.
    public var bytes: Int
    /// Frames (access units) in it.
    public var frames: Int
    /// The clip reached post-capture after the event's end and the file was
    /// closed. False while it is written, and for a clip cut short (a crash,
    /// a full disk): such a file plays up to its last whole fragment.
    public var complete: Bool
    /// Stopped at `events.maxClipSeconds` while the event went on.
    public var capped: Bool?
    /// Why it stopped before its end, in words without paths.
    public var error: String?

    public init(start: Double, duration: Double = 0, bytes: Int = 0, frames: Int = 0, complete: Bool = false,
                capped: Bool? = nil, error: String? = nil) {
        self.start = start; self.duration = duration; self.bytes = bytes; self.frames = frames
        self.complete = complete; self.capped = capped; self.error = error
    }
}
