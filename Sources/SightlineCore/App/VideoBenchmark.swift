import Foundation
import SightlineVision
import SightlineSupport
import SightlinePipeline
import SightlineHTTP
import SightlineEvents

/// `sightline bench --h264 VIDEO`: what H.264 buys over the JPEG stream on
/// real footage. Every frame of the video (read by the project's own file
/// source, at its own size as `serve` would send it, or scaled to `size`)
/// is encoded by the H.264 encoder at the given settings and by the JPEG
/// encoder at the server's quality; each result is decoded again (libavcodec,
/// TurboJPEG) and compared with the frame by luma SSIM. Everything runs on
/// the calling thread, one encoder at a time, as an H.264 sink would run.
///
/// The figure it serves: bytes per frame of H.264 at the defaults at most a
/// quarter of JPEG's at quality 80, with SSIM no lower, encode time p50/p99.
public struct VideoBenchmark {
    public struct Side: Codable, Sendable {
        public var bytesPerFrame: Double
        /// Time of `encode` alone (for H.264 the BGR to YUV conversion included).
        public var encodeMs: PipelineBenchmark.StageTiming
        /// Mean over the frames of luma SSIM against the frame.
        public var ssim: Double
        public var ssimMin: Double
    }

    public struct H264Side: Codable, Sendable {
        public var settings: H264Encoder.Settings
        public var keyframeInterval: Int
        public var keyframes: Int
        public var keyframeBytes: Double
        public var codec: String?
        /// What the SEI adds to every access unit (here with no detections).
        public var seiBytesPerFrame: Double
        public var result: Side
    }

    public struct Report: Codable, Sendable {
        public var input: String
        public var width: Int
        public var height: Int
        public var fps: Double
        public var frames: Int
        public var h264: H264Side
        public var jpeg: JPEGSide
        /// H.264 bytes per frame over JPEG's.
        public var ratio: Double
    }

    public struct JPEGSide: Codable, Sendable {
        public var quality: Int
        public var result: Side
    }

    public let inputPath: String
    public let frames: Int
    public let settings: H264Encoder.Settings
    public let jpegQuality: Int
    /// Scale every frame to this size first (nil: the video's own size, as `serve` sends it).
    public let size: (width: Int, height: Int)?
    /// Also write the access units (the Sightline SEI in each) to this Annex B file.
    public let writePath: String?

    public init(inputPath: String, frames: Int, settings: H264Encoder.Settings = H264Encoder.Settings(),
                jpegQuality: Int = 80, size: (width: Int, height: Int)? = nil, writePath: String? = nil) {
        self.inputPath = inputPath
        self.frames = frames
        self.settings = settings
        self.jpegQuality = jpegQuality
        self.size = size
        self.writePath = writePath
    }

    public func run() throws -> Report {
        let source = VideoCaptureSource(uri: inputPath, kind: .file(pace: .max))
        let format = try source.open()
        defer { source.close() }
        let count = min(max(1, frames), source.frameCount ?? frames)
        let width = size?.width ?? format.width, height = size?.height ?? format.height
        let h264 = try H264Encoder(width: width, height: height, fps: format.fps, settings: settings)
        let h264Decoder = try H264Decoder()
        let jpeg = try JPEGEncoder(quality: jpegQuality)
        let jpegDecoder = try JPEGDecoder()
        var output: FileHandle?
        if let writePath {
            guard FileManager.default.createFile(atPath: writePath, contents: nil) else {
                throw SourceError.cannotOpen("cannot write \(writePath)")
            }
            output = try FileHandle(forWritingTo: URL(fileURLWithPath: writePath))
        }
        defer { try? output?.close() }

        var h264Ms: [Double] = [], jpegMs: [Double] = [], h264SSIM: [Double] = [], jpegSSIM: [Double] = []
        var h264Bytes = 0, jpegBytes = 0, seiBytes = 0, keyframes = 0, keyframeBytes = 0
        var codec: String?
        for index in 0..<count {
            var image = try source.nextImage().image
            if let size, image.width != size.width || image.height != size.height {
                image = try ImageOps.resized(image, width: size.width, height: size.height)
            }
            let t0 = MonotonicClock.nanos()
            let encoded = try h264.encode(image)
            let t1 = MonotonicClock.nanos()
            let boxes = SEIBoxes.Payload(seq: UInt64(index + 1), capturedAt: MonotonicClock.wallSeconds(),
                                         width: image.width, height: image.height, detections: [])
            let unit = try VideoAccessUnit(encoded: encoded, boxes: boxes)
            let t2 = MonotonicClock.nanos()
            let jpegData = try jpeg.encode(image)
            let t3 = MonotonicClock.nanos()
            h264Ms.append(Double(t1 - t0) / 1e6)
            jpegMs.append(Double(t3 - t2) / 1e6)
            // The figure is the encoder's: bytes without the SEI, whose size is the boxes'.
            h264Bytes += encoded.data.count
            seiBytes += unit.data.count - encoded.data.count
            jpegBytes += jpegData.count
            if encoded.isKeyframe {
                keyframes += 1
                keyframeBytes += encoded.data.count
                codec = codec ?? unit.codec
            }
            try output?.write(contentsOf: unit.data)

            guard let decoded = try h264Decoder.decode(unit.data) else {
                throw AVError(message: "frame \(index + 1) did not decode")
            }
            let reference = decoded.width == image.width && decoded.height == image.height
                ? image : image.cropped(x: 0, y: 0, width: decoded.width, height: decoded.height)
            h264SSIM.append(try ImageOps.ssim(reference, decoded))
            jpegSSIM.append(try ImageOps.ssim(image, try jpegDecoder.decodeFile(jpegData, channels: 3)))
        }
        func side(_ bytes: Int, _ ms: [Double], _ ssim: [Double]) -> Side {
            Side(bytesPerFrame: (Double(bytes) / Double(count)).rounded(toPlaces: 1),
                 encodeMs: PipelineBenchmark.timing(ms),
                 ssim: (ssim.reduce(0, +) / Double(ssim.count)).rounded(toPlaces: 4),
                 ssimMin: (ssim.min() ?? 0).rounded(toPlaces: 4))
        }
        return Report(input: inputPath, width: width, height: height, fps: format.fps, frames: count,
                      h264: H264Side(settings: settings, keyframeInterval: h264.keyframeInterval, keyframes: keyframes,
                                     keyframeBytes: (Double(keyframeBytes) / Double(max(1, keyframes))).rounded(toPlaces: 1),
                                     codec: codec, seiBytesPerFrame: (Double(seiBytes) / Double(count)).rounded(toPlaces: 1),
                                     result: side(h264Bytes, h264Ms, h264SSIM)),
                      jpeg: JPEGSide(quality: jpegQuality, result: side(jpegBytes, jpegMs, jpegSSIM)),
                      ratio: (Double(h264Bytes) / Double(max(1, jpegBytes))).rounded(toPlaces: 4))
    }
}
