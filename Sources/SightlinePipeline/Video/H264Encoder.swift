import CSightlineAV
import Foundation
import SightlineVision
import SightlineSupport

/// Encodes BGR (or gray, or BGRX) frames to H.264 with libx264 through
/// libavcodec: profile High, 8-bit 4:2:0, no B-frames, one access unit out
/// for every frame in (Annex B), an IDR every `keyframeSeconds` and
/// whenever asked, SPS and PPS before every IDR.
///
/// Frames must keep the size the encoder was made for (a new size needs a
/// new encoder). H.264 4:2:0 needs an even size: an odd last column or row
/// is left out of the picture.
///
/// Ownership: not thread-safe; an encoder belongs to one thread (an H.264
/// sink's own thread), like `JPEGEncoder`. With `threads` 1 all of x264's
/// work happens inside `encode` on that thread.
public final class H264Encoder {
    /// The defaults are chosen by `sightline bench --h264` (docs/benchmarks.md): at
    /// `veryfast` and crf 20 a 640x480 frame costs about 5 ms of one core, and on
    /// natural footage (the street camera, the panned photos) H.264 takes under a
    /// quarter of the bytes of JPEG at quality 80 at a luma SSIM at least as high.
    /// `superfast` needs about a quarter more bytes for the same SSIM, `faster`
    /// about 1.7 times the time; crf 19 goes past a quarter of JPEG's bytes on the
    /// street camera (10 fps, so a keyframe every 20 frames), crf 21 falls below
    /// JPEG's SSIM on the panned photos.
    public struct Settings: Sendable, Equatable, Codable {
        /// x264's speed/quality trade (ultrafast ... placebo).
        public var preset = "veryfast"
        /// x264's tune; must include `zerolatency` (no lookahead, so one frame in is one out).
        public var tune = "zerolatency"
        /// Constant quality (0-51, lower is better), used when `bitrateKbps` is nil.
        public var crf = 20
        /// An average bitrate instead of constant quality (one-second VBV buffer).
        public var bitrateKbps: Int?
        /// Seconds between IDRs when nobody asks for one.
        public var keyframeSeconds = 2.0
        /// x264 threads; more than 1 gives one slice per thread.
        public var threads = 1
        /// More x264 options, `key=value:key=value` (x264's --x264-params); nil: none.
        /// The default leaves out veryfast's search of 8x8 inter partitions:
        /// on the street camera and the clean panned photos at 640x480 it takes
        /// 10-25 % less encode time for 1-3 % more bytes at the same SSIM
        /// (docs/benchmarks.md).
        public var x264Params: String? = "partitions=i8x8,i4x4"

        public init() {}
    }

    public let settings: Settings
    /// The size of the frames `encode` takes.
    public let frameWidth: Int
    public let frameHeight: Int
    /// The size of the pictures in the stream (the frame's, made even).
    public let width: Int
    public let height: Int
    public let fps: Double
    /// Frames from one IDR to the next unless one is forced.
    public let keyframeInterval: Int
    private let handle: OpaquePointer

    public init(width frameWidth: Int, height frameHeight: Int, fps: Double, settings: Settings = Settings()) throws {
        guard frameWidth >= 2, frameHeight >= 2 else {
            throw AVError(message: "frame must be at least 2x2, got \(frameWidth)x\(frameHeight)")
        }
        guard fps.isFinite, fps > 0, settings.keyframeSeconds > 0, settings.threads >= 1 else {
            throw AVError(message: "fps, keyframeSeconds and threads must be positive")
        }
        guard settings.tune.split(separator: ",").contains("zerolatency") else {
            throw AVError(message: "tune must include zerolatency (one access unit per frame), got \(settings.tune)")
        }
        guard (0...51).contains(settings.crf), (settings.bitrateKbps ?? 1) > 0 else {
            throw AVError(message: "crf must be 0...51 and bitrateKbps positive")
        }
        self.settings = settings
        self.frameWidth = frameWidth
        self.frameHeight = frameHeight
        width = frameWidth & ~1
        height = frameHeight & ~1
        self.fps = fps
        let interval = max(1, Int((fps * settings.keyframeSeconds).rounded()))
        keyframeInterval = interval
        let rate = Self.rational(fps)
        handle = try AVError.check { error in
            sl_av_encoder_open(Int32(frameWidth & ~1), Int32(frameHeight & ~1), rate.num, rate.den, settings.preset,
                               settings.tune, Int32(settings.crf), Int32(settings.bitrateKbps ?? 0),
                               Int32(interval), Int32(settings.threads), settings.x264Params, error)
        }
    }

    deinit { sl_av_encoder_close(handle) }

    /// The access unit of `image`, an IDR when `forceKeyframe` (a new viewer,
    /// a clip's start) or when the interval comes round.
    public func encode(_ image: ImageBuffer, forceKeyframe: Bool = false) throws -> EncodedVideo {
        guard image.width == frameWidth, image.height == frameHeight else {
            throw AVError(message: "frame is \(image.width)x\(image.height), the encoder was made for "
                              + "\(frameWidth)x\(frameHeight)")
        }
        var packet = sl_av_packet()
        try AVError.check { error in
            sl_av_encoder_encode(handle, image.bytes, Int32(image.stride), Int32(image.channels),
                                 forceKeyframe ? 1 : 0, &packet, error)
        }
        return EncodedVideo(data: Data(bytes: packet.data, count: packet.size), isKeyframe: packet.is_key != 0)
    }

    /// fps as a fraction libavcodec takes: whole rates exactly, NTSC's 29.97 as 30000/1001.
    static func rational(_ fps: Double) -> (num: Int32, den: Int32) {
        if fps == fps.rounded() { return (Int32(fps), 1) }
        let ntsc = fps * 1001 / 1000
        if abs(ntsc - ntsc.rounded()) < 1e-3 { return (Int32(ntsc.rounded() * 1000), 1001) }
        return (Int32((fps * 1000).rounded()), 1000)
    }
}
