import CSightlineAV
import Foundation
import SightlineSupport

/// One H.264 stream written through libavformat: to a relay, RTSP (ANNOUNCE
/// and RECORD over TCP) or RTMP (FLV), or to a file (fragmented MP4, for
/// event clips and recordings). Access units go in as the encoder made them
/// (Annex B, the Sightline SEI included); the muxer repackages them as its
/// format needs, SEI and all.
///
/// Ownership: one thread (a publisher's or the clip recorder's) opens,
/// writes and finishes it; `interrupt` may come from any thread, and makes a
/// blocking call give up. `@unchecked Sendable` for that one call: the shim
/// reads its flag atomically; `handle` is only changed by the owning thread.
public final class H264Muxer: @unchecked Sendable {
    private var handle: OpaquePointer?

    /// Fragmented MP4 that plays up to its last fragment if the writer dies:
    /// an empty `moov`, then a fragment at every keyframe and at least every second.
    public static let fragmentedMP4Options = "movflags=frag_keyframe+empty_moov+default_base_moof:frag_duration=1000000"

    /// `parameterSets`: the SPS and PPS (Annex B) of the keyframe the stream starts on.
    /// `options`: the muxer's, `key=value:key=value`.
    public init(url: String, format: String, width: Int, height: Int, parameterSets: Data, options: String = "",
                timeoutSeconds: Double) throws {
        handle = try parameterSets.withUnsafeBytes { sets in
            try AVError.check { error in
                sl_av_muxer_open(url, format, Int32(width), Int32(height), sets.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                 sets.count, options, Int32(max(1, timeoutSeconds * 1000)), error)
            }
        }
    }

    deinit { sl_av_muxer_close(handle) }

    /// Sends one access unit; `milliseconds` must increase.
    public func write(_ accessUnit: Data, milliseconds: Int64, isKeyframe: Bool) throws {
        guard let handle else { throw AVError(code: -1, message: "the stream has ended") }
        _ = try accessUnit.withUnsafeBytes { bytes in
            try AVError.check { error in
                sl_av_muxer_write(handle, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, milliseconds,
                                  isKeyframe ? 1 : 0, error)
            }
        }
    }

    /// Ends the stream: for MP4 the last fragment and the index go out. Throws
    /// when they could not be written (what was written before stays).
    public func finish() throws {
        guard let handle else { return }
        self.handle = nil
        _ = try AVError.check { error in sl_av_muxer_finish(handle, error) }
    }

    /// Any thread: the blocking call under way, and every later one, gives up.
    public func interrupt() {
        if let handle { sl_av_muxer_interrupt(handle) }
    }
}
