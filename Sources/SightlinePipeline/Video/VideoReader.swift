import CSightlineAV
import Foundation
import SightlineVision
import SightlineSupport

/// A video file or a stream URL demuxed by libavformat and decoded by
/// libavcodec (any codec they have) to BGR pictures: what a file or stream
/// source reads through.
///
/// Ownership: not thread-safe; a reader belongs to one thread.
public final class VideoReader {
    /// What the input says about its video stream.
    public struct Info: Sendable {
        /// Frames per second (the average, else the base rate); nil when unknown.
        public var fps: Double?
        /// Frames in the stream as the container says, else its duration
        /// times its rate; nil when unknown (a stream URL).
        public var frameCount: Int?
        /// libavcodec's name of the codec ("h264", "mpeg4", "mjpeg").
        public var codec: String
        /// The picture size the container gives (0 when it gives none).
        public var width = 0
        public var height = 0
    }

    /// A picture and, when the reader keeps units, the compressed frame it came from.
    public struct Picture {
        /// The decoded picture, converted to BGR when first asked for
        /// (`image`), or at the detection size straight from the decoder's
        /// format (`FramePicture.scaledFromSource`).
        public var picture: FramePicture
        public var image: ImageBuffer { picture.image }
        /// The packet as the stream had it (H.264: Annex B); nil when none can be given.
        public var unit: Data?
        /// The container or parser called the unit a keyframe.
        public var unitIsKey = false
        /// Units before this picture's gave no picture.
        public var lostBefore = false
    }

    private let handle: OpaquePointer
    public let info: Info
    /// What `keepUnits` found to keep (nil: nothing; the codec's units are not passed on).
    public private(set) var unitCodec: SourceUnit.Codec?
    /// MJPEG whose JPEGs are read as they are and decoded by TurboJPEG when
    /// asked for (`JPEGPicture`), not by libavcodec.
    public let readsJPEGs: Bool
    /// Reads the JPEGs' headers (`readsJPEGs`).
    private var jpegHeaders: JPEGDecoder?

    /// Opens `url` (a path, or any URL libavformat reads: rtsp:// over TCP,
    /// http://) and its best video stream's decoder. `live` keeps every
    /// picture as early as it can be (a stream); a file may be decoded with
    /// frame threads. Connecting, probing and each read give up after
    /// `timeout` seconds.
    /// `keepUnits`: keep each picture's packet (H.264 and MJPEG) to hand on beside it.
    /// `jpegsByTurboJPEG`: an MJPEG input's JPEGs are not decoded by
    /// libavcodec but given as `JPEGPicture`s (`readsJPEGs`), each with its
    /// JPEG as the unit, whether or not `keepUnits` asked for units.
    public init(url: String, live: Bool, timeout: Double = 5, threads: Int = VideoReader.defaultThreads,
                keepUnits: Bool = false, jpegsByTurboJPEG: Bool = false) throws {
        var raw = sl_av_reader_info()
        handle = try AVError.check { error in
            sl_av_reader_open(url, Int32(max(1, timeout * 1000)), Int32(max(1, threads)), live ? 1 : 0, &raw, error)
        }
        let codec = withUnsafeBytes(of: &raw.codec) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        info = Info(fps: raw.fps > 0 ? raw.fps : nil,
                    frameCount: raw.frame_count > 0 && raw.frame_count < 1_000_000_000 ? Int(raw.frame_count) : nil,
                    codec: codec, width: Int(max(0, raw.width)), height: Int(max(0, raw.height)))
        if keepUnits || (jpegsByTurboJPEG && codec == "mjpeg") {
            let handle = self.handle
            let kept = try AVError.check { sl_av_reader_keep_units(handle, $0) }
            unitCodec = kept == 1 ? .h264 : kept == 2 ? .mjpeg : nil
        }
        readsJPEGs = jpegsByTurboJPEG && unitCodec == .mjpeg
    }

    /// The stream's SPS and PPS, Annex B, as its container gave them (empty: they come in band).
    public var parameterSets: Data {
        var data: UnsafePointer<UInt8>?
        var size = 0
        sl_av_reader_parameter_sets(handle, &data, &size)
        guard let data, size > 0 else { return Data() }
        return Data(bytes: data, count: size)
    }

    /// Whether the stream reorders pictures (B-frames): its units cannot be given beside its pictures.
    public var reorders: Bool { sl_av_reader_reorders(handle) != 0 }

    /// The next picture with its unit, or nil at the end of the input.
    public func readPicture() throws -> Picture? {
        if readsJPEGs { return try readJPEG() }
        var got: Int32 = 0, width: Int32 = 0, height: Int32 = 0
        var unit = sl_av_unit()
        try AVError.check { sl_av_reader_read_unit_kept(handle, &got, &width, &height, &unit, $0) }
        guard got != 0 else { return nil }
        // Held as decoded, converted when and at the size it is asked for.
        let picture: FramePicture
        if let decoded = DecodedPicture(keptBy: handle) {
            picture = FramePicture(converting: decoded)
        } else {
            // No memory for a reference: converted now, straight into the frame's own buffer.
            let image = ImageBuffer(width: Int(width), height: Int(height), channels: 3, zeroed: false)
            try AVError.check { sl_av_reader_convert(handle, image.bytes, Int32(image.stride), $0) }
            picture = FramePicture(image)
        }
        var result = Picture(picture: picture)
        if let data = unit.data, unit.size > 0 {
            result.unit = Data(bytes: data, count: unit.size)
            result.unitIsKey = unit.is_key != 0
        }
        result.lostBefore = unit.lost != 0
        return result
    }

    /// Packets whose JPEG header TurboJPEG cannot read are skipped (counted
    /// as lost), as libavcodec skips packets it refuses, unless this many
    /// come in a row.
    static let refusedJPEGsInARow = 100

    /// The next JPEG packet as a picture decoded when asked for, with the
    /// packet as its unit.
    private func readJPEG() throws -> Picture? {
        let headers = try jpegHeaders ?? JPEGDecoder()
        jpegHeaders = headers
        var lost = false
        for _ in 0..<Self.refusedJPEGsInARow {
            var got: Int32 = 0
            var unit = sl_av_unit()
            try AVError.check { sl_av_reader_read_packet(handle, &got, &unit, $0) }
            guard got != 0, let data = unit.data else { return nil }
            let jpeg = Data(bytes: data, count: unit.size)
            guard let picture = try? JPEGPicture(jpeg: jpeg, headerBy: headers) else {
                lost = true
                continue
            }
            if !firstJPEGChecked {
                try checkFirst(picture)
                firstJPEGChecked = true
            }
            return Picture(picture: FramePicture(converting: picture), unit: jpeg, unitIsKey: true, lostBefore: lost)
        }
        throw AVError(code: -1, message: "\(Self.refusedJPEGsInARow) JPEGs in a row had no header TurboJPEG could read")
    }

    /// The first JPEG is decoded in full at once, so an MJPEG that TurboJPEG
    /// cannot decode (CMYK, 12 bits, lossless) or that libavcodec reads
    /// otherwise (interlaced: a field per JPEG, half the container's height)
    /// is found at open, and read through libavcodec instead.
    public struct JPEGsRefused: Error, CustomStringConvertible {
        public let description: String
    }

    private var firstJPEGChecked = false

    private func checkFirst(_ picture: JPEGPicture) throws {
        if info.width > 0, info.height > 0, (picture.width, picture.height) != (info.width, info.height) {
            throw JPEGsRefused(description: "the JPEGs are \(picture.width)x\(picture.height) in a "
                               + "\(info.width)x\(info.height) stream")
        }
        do {
            _ = try picture.converted(width: picture.width, height: picture.height)
        } catch {
            throw JPEGsRefused(description: "TurboJPEG cannot decode the first JPEG (\(error))")
        }
    }

    /// Two decoder threads at most: the capture thread shares the machine
    /// with the pipeline and the face worker.
    public static let defaultThreads = min(2, ProcessInfo.processInfo.activeProcessorCount)

    deinit { sl_av_reader_close(handle) }

    /// The next picture, or nil at the end of the input (after every
    /// picture the decoder held). Its size may differ from the last one's.
    public func read() throws -> ImageBuffer? {
        var got: Int32 = 0
        var picture = sl_av_picture()
        try AVError.check { sl_av_reader_read(handle, &got, &picture, $0) }
        guard got != 0 else { return nil }
        return ImageBuffer(copying: picture)
    }

    /// Back to the first picture. Throws when the input cannot seek (close
    /// this reader and open another).
    public func rewind() throws {
        try AVError.check { sl_av_reader_rewind(handle, $0) }
    }
}

extension AVError {
    /// libavformat's code for a read that got nothing within the timeout.
    public static let timedOut = -ETIMEDOUT
}

extension ImageBuffer {
    /// Copies a picture the libavcodec shim decoded (BGR24).
    convenience init(copying picture: sl_av_picture) {
        self.init(width: Int(picture.width), height: Int(picture.height), channels: 3, zeroed: false)
        guard let data = picture.data else { return }
        for row in 0..<height {
            (bytes + row * stride).update(from: data + row * Int(picture.stride), count: width * 3)
        }
    }
}
