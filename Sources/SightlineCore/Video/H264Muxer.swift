import CSightlineAV
import Foundation

/// One H.264 stream sent to a relay through libavformat: RTSP (ANNOUNCE and
/// RECORD over TCP) or RTMP (FLV). Access units go in as the encoder made
/// them (Annex B, the Sightline SEI included); the muxer repackages them as
/// its protocol needs, SEI and all.
///
/// Ownership: one thread (a publisher's) opens, writes and closes it;
/// `interrupt` may come from any thread, and makes a blocking call give up.
/// `@unchecked Sendable` for that one call: the shim reads its flag atomically.
public final class H264Muxer: @unchecked Sendable {
    private let handle: OpaquePointer

    /// `parameterSets`: the SPS and PPS (Annex B) of the keyframe the stream starts on.
    public init(url: String, format: String, width: Int, height: Int, parameterSets: Data, timeoutSeconds: Double) throws {
        handle = try parameterSets.withUnsafeBytes { sets in
            try AVError.check { error in
                sl_av_muxer_open(url, format, Int32(width), Int32(height), sets.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                 sets.count, Int32(max(1, timeoutSeconds * 1000)), error)
            }
        }
    }

    deinit { sl_av_muxer_close(handle) }

    /// Sends one access unit; `milliseconds` must increase.
    public func write(_ accessUnit: Data, milliseconds: Int64, isKeyframe: Bool) throws {
        _ = try accessUnit.withUnsafeBytes { bytes in
            try AVError.check { error in
                sl_av_muxer_write(handle, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, milliseconds,
                                  isKeyframe ? 1 : 0, error)
            }
        }
    }

    /// Any thread: the blocking call under way, and every later one, gives up.
    public func interrupt() { sl_av_muxer_interrupt(handle) }
}
