import CSightlineAV
import Foundation

/// What a video file holds, read packet by packet through libavformat (no
/// decoding): how a clip left by a crash is measured when the server starts
/// again. A fragment cut short at its end is not counted.
public struct VideoFileProbe: Sendable, Equatable {
    public var packets: Int
    public var keyframes: Int
    /// Seconds from the first packet's start to the last one's end.
    public var duration: Double
    public var width: Int
    public var height: Int

    /// Any thread (blocks on the disk). Throws when the file is not a video
    /// with at least one whole packet.
    public static func read(_ path: String) throws -> VideoFileProbe {
        var info = sl_av_file_info()
        _ = try AVError.check { error in sl_av_file_probe(path, &info, error) }
        return VideoFileProbe(packets: Int(info.packets), keyframes: Int(info.keyframes), duration: info.duration,
                              width: Int(info.width), height: Int(info.height))
    }
}
