import CSightlineAV
import Foundation

/// Fragmented MP4 for one `/ws?video=fmp4` viewer (Media Source Extensions,
/// which need no secure context): an init segment (`ftyp`, `moov` with the
/// avcC of the stream's SPS and PPS), then one fragment (`moof`, `mdat`) per
/// access unit, muxed by libavformat's MP4 muxer into memory (CSightlineAV's
/// `sl_av_fragmenter`). The units keep their Sightline SEI.
///
/// Timestamps (docs/video.md, "Plain HTTP"): 90 kHz ticks. libavformat dates
/// each fragment by the sum of the sample durations before it, so the
/// timeline is made of durations: the first unit of an init segment has pts
/// 0, and each unit lasts the gap between capture times, smoothed (weight
/// 0.2 for each new gap; 1/25 s for the first), so the stream plays at the
/// camera's pace, a few gaps off its clock at most, and never has a hole (a browser would drop pictures until
/// the next keyframe after one). pts equals dts (no B-frames). Each frame's
/// JSON carries its fragment's `pts`: the page finds the frame of the
/// presented picture from `requestVideoFrameCallback`'s `mediaTime` as
/// `round(mediaTime * 90000)`.
///
/// Not thread-safe: one thread (the lws service thread, in the viewer's
/// `Connection`) owns it.
public final class FMP4Fragmenter {
    public static let timescale: Int64 = 90_000

    /// What one access unit became.
    public struct Output {
        /// A new init segment to append before `fragment` (the first unit, or
        /// new SPS/PPS or picture size: the timeline starts again at 0).
        public let initSegment: Data?
        /// The `avc1.PPCCLL` codec of the init segment, with it.
        public let codec: String?
        public let fragment: Data
        /// The fragment's presentation time, in `timescale` ticks.
        public let pts: Int64
    }

    public struct NoKeyframe: Error, CustomStringConvertible {
        public var description: String { "an fMP4 stream starts on a keyframe" }
    }

    private var handle: OpaquePointer?
    private var parameterSets = Data()
    private var size = (width: 0, height: 0)
    private var lastNanos: UInt64 = 0
    /// The pts of the next unit: the sum of the durations so far.
    private var nextPts: Int64 = 0
    /// The duration given to a unit: the gap between frames (smoothed), in ticks.
    private var duration: Int64 = 3_600
    private var smoothed: Double?
    /// Weight of each new gap in the smoothed one.
    static let smoothing = 0.2

    public init() {}

    deinit { sl_av_fragmenter_close(handle) }

    /// Muxes `unit` (`width` x `height`); throws when the stream would not
    /// start on a keyframe or libavformat refuses it.
    public func fragment(_ unit: Data, isKeyframe: Bool, capturedNanos: UInt64, width: Int, height: Int) throws -> Output {
        var initSegment: Data?
        var codec: String?
        if isKeyframe {
            let sets = AnnexB.parameterSets(of: unit)
            if handle == nil || sets != parameterSets || size != (width, height) {
                try open(sets, width: width, height: height)
                initSegment = output()
                codec = AnnexB.codecString(in: unit)
                nextPts = 0
                duration = 3_600
                smoothed = nil
                lastNanos = capturedNanos
            }
        }
        guard let handle else { throw NoKeyframe() }
        if capturedNanos > lastNanos {
            // The gaps smoothed (a few ms of capture jitter would make the browser drop pictures); the sum of
            // the durations still follows the capture clock, off by at most a few gaps.
            let gap = Double(capturedNanos - lastNanos) * Double(Self.timescale) / 1e9
            smoothed = smoothed == nil ? gap : smoothed! + Self.smoothing * (gap - smoothed!)
            duration = min(Self.timescale, max(Self.timescale / 200, Int64(smoothed!.rounded())))
        }
        lastNanos = capturedNanos
        let pts = nextPts
        _ = try unit.withUnsafeBytes { bytes in
            try AVError.check { error in
                sl_av_fragmenter_write(handle, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, pts,
                                       duration, isKeyframe ? 1 : 0, error)
            }
        }
        nextPts = pts + duration
        return Output(initSegment: initSegment, codec: codec, fragment: output(), pts: pts)
    }

    private func open(_ sets: Data, width: Int, height: Int) throws {
        sl_av_fragmenter_close(handle)
        handle = nil
        handle = try sets.withUnsafeBytes { bytes in
            try AVError.check { error in
                sl_av_fragmenter_open(Int32(width), Int32(height), bytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                      bytes.count, Int32(Self.timescale), error)
            }
        }
        parameterSets = sets
        size = (width, height)
    }

    private func output() -> Data {
        var data: UnsafePointer<UInt8>?
        var count = 0
        sl_av_fragmenter_output(handle, &data, &count)
        guard let data, count > 0 else { return Data() }
        return Data(bytes: data, count: count)
    }
}
