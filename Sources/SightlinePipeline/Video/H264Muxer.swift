import CSightlineAV
import Foundation
import Synchronization
import SightlineSupport

/// One H.264 stream written through libavformat: to a relay, RTSP (ANNOUNCE
/// and RECORD over TCP) or RTMP (FLV), or to a file (fragmented MP4, for
/// event clips and recordings). Access units go in as the encoder made them
/// (Annex B, the Sightline SEI included); the muxer repackages them as its
/// format needs, SEI and all.
///
/// Ownership: one thread (a publisher's or the clip recorder's) opens,
/// writes and finishes it; `interrupt` may come from any thread, and makes a
/// blocking call give up. The handle is kept in `live`, a `Mutex`:
/// `interrupt` reaches it only under that lock, and `finish` (or `deinit`)
/// takes it out under the lock before freeing it, so an interrupt never
/// touches a freed muxer. The owning thread's calls run outside the lock,
/// so an interrupt is never kept waiting by the call it interrupts.
public final class H264Muxer: Sendable {
    private let live: Locked<MuxerHandle?>

    /// Fragmented MP4 that plays up to its last fragment if the writer dies:
    /// an empty `moov`, then a fragment at every keyframe and at least every second.
    public static let fragmentedMP4Options = "movflags=frag_keyframe+empty_moov+default_base_moof:frag_duration=1000000"

    /// `parameterSets`: the SPS and PPS (Annex B) of the keyframe the stream starts on.
    /// `options`: the muxer's, `key=value:key=value`.
    public init(url: String, format: String, width: Int, height: Int, parameterSets: Data, options: String = "",
                timeoutSeconds: Double) throws {
        let opened = try parameterSets.withUnsafeBytes { sets in
            try AVError.check { error in
                sl_av_muxer_open(url, format, Int32(width), Int32(height), sets.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                 sets.count, options, Int32(max(1, timeoutSeconds * 1000)), error)
            }
        }
        live = Locked(MuxerHandle(pointer: opened))
    }

    deinit {
        if let handle = live.withLock({ $0.take() }) { sl_av_muxer_close(handle.pointer) }
    }

    /// Sends one access unit; `milliseconds` must increase.
    public func write(_ accessUnit: Data, milliseconds: Int64, isKeyframe: Bool) throws {
        guard let handle = live.withLock({ $0 }) else { throw AVError(code: -1, message: "the stream has ended") }
        _ = try accessUnit.withUnsafeBytes { bytes in
            try AVError.check { error in
                sl_av_muxer_write(handle.pointer, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, milliseconds,
                                  isKeyframe ? 1 : 0, error)
            }
        }
    }

    /// Ends the stream: for MP4 the last fragment and the index go out. Throws
    /// when they could not be written (what was written before stays).
    public func finish() throws {
        guard let handle = live.withLock({ $0.take() }) else { return }
        _ = try AVError.check { error in sl_av_muxer_finish(handle.pointer, error) }
    }

    /// Any thread: the blocking call under way, and every later one, gives up.
    public func interrupt() {
        live.withLock { handle in
            if let handle { sl_av_muxer_interrupt(handle.pointer) }
        }
    }
}

/// An open libavformat muxer (`sl_av_muxer`), to keep in `H264Muxer.live`.
/// `@unchecked Sendable` so that lock can hold it: another thread makes only
/// `sl_av_muxer_interrupt` (an atomic store) on it, under that lock; every
/// other call is the owning thread's, and it is freed only after being taken
/// out of the lock.
private struct MuxerHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}
