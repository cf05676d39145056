import Foundation
import SightlineVision

/// A video file or a stream URL, demuxed and decoded by FFmpeg (VideoReader:
/// libavformat, libavcodec, libswscale, which the server links anyway).
/// Files loop at their end; streams treat their end as a failure, so the
/// capture loop reconnects with backoff.
///
/// Threads: used only on the capture thread that owns it.
public final class VideoCaptureSource: FrameSource {
    public enum Kind: Sendable { case file(pace: FilePace), stream }

    /// How long connecting, probing or one read of a stream may take before
    /// the source counts as gone.
    public static let timeout = 5.0

    public let uri: String
    public let kind: Kind
    /// Plays a file at this rate instead of its own.
    public let fpsOverride: Double?
    /// What viewers see: a file's base name, a stream's scheme, host and port
    /// (the path and credentials are for admins, in the spec).
    public var name: String {
        switch kind {
        case .file: return (uri as NSString).lastPathComponent
        case .stream: return SourceSpec.publicLocation(uri)
        }
    }
    public var pacing: SourcePacing {
        switch kind {
        case .file(pace: .native): return .fixedRate
        case .file(pace: .max): return .pipeline
        case .stream: return .device
        }
    }

    /// Hand the stream's own H.264 access units or MJPEG JPEGs on beside the pictures.
    public let passOn: Bool
    private var reader: VideoReader?
    /// The picture open() decoded to learn the size, given as the first frame.
    private var pending: CapturedImage?
    /// What this session passes on (see `SourceFormat.passedOn`).
    private var passedOn: SourceUnit.Codec?
    private var h264Units = H264UnitFilter()
    /// The stream turned out to reorder pictures (B-frames): from the next
    /// open on, nothing is passed on and viewers get pictures encoded here.
    private var reorders = false
    /// The MJPEG's JPEGs turned out to be ones TurboJPEG does not decode as
    /// libavcodec does (`VideoReader.JPEGsRefused`): from the next open on,
    /// libavcodec decodes them.
    private var jpegsRefused = false
    private var fps = 0.0
    /// Frames in the file as its container reports them (nil for streams,
    /// or when it does not say); known once opened.
    public private(set) var frameCount: Int?

    public init(uri: String, kind: Kind, fpsOverride: Double? = nil, passOn: Bool = true) {
        self.passOn = passOn
        self.uri = uri
        self.kind = kind
        self.fpsOverride = fpsOverride
    }

    deinit { close() }

    private var isFile: Bool {
        if case .file = kind { return true }
        return false
    }

    private func makeReader() throws -> VideoReader {
        // A path goes to libavformat as a file: URL, so a colon in it is not
        // taken for a protocol.
        try VideoReader(url: isFile ? "file:" + uri : uri, live: !isFile, timeout: Self.timeout,
                        keepUnits: passOn && !reorders, jpegsByTurboJPEG: !jpegsRefused)
    }

    public func open() throws -> SourceFormat {
        close()
        if isFile, !FileManager.default.isReadableFile(atPath: uri) {
            throw SourceError.cannotOpen("no readable file at \(uri)")
        }
        let opened: VideoReader
        do {
            opened = try makeReader()
        } catch {
            throw SourceError.cannotOpen("\(uri): \(error)")
        }
        reader = opened
        let reported = opened.info.fps ?? 0
        fps = fpsOverride ?? (reported.isFinite && reported > 0 && reported <= 240 ? reported : 25)
        frameCount = isFile ? opened.info.frameCount : nil
        // Decode the first picture to learn the size; it is the first frame
        // given, so none is lost and nothing needs rewinding.
        h264Units = Self.unitFilter(for: opened)
        // (A JPEG reader gives its JPEGs as units even when none is passed on.)
        passedOn = passOn && !opened.reorders ? opened.unitCodec : nil
        let first: CapturedImage
        do {
            first = try read()
        } catch is VideoReader.JPEGsRefused {
            close()
            jpegsRefused = true
            return try open()
        } catch SourceError.endOfStream {
            close()
            throw SourceError.cannotOpen("\(uri): no picture could be decoded")
        } catch {
            close()
            throw SourceError.cannotOpen("\(uri): \(error)")
        }
        pending = first
        // The first picture is converted now, so a format libswscale cannot
        // convert is refused here rather than later (the others are converted
        // only when asked for, see `FramePicture`). A JPEG reader has decoded
        // its first JPEG in full already (`VideoReader.JPEGsRefused`).
        if !opened.readsJPEGs { _ = first.image }
        return SourceFormat(width: first.picture.width, height: first.picture.height, fps: fps,
                            pixelFormat: opened.info.codec, passedOn: passedOn)
    }

    public func close() {
        reader = nil
        pending = nil
        passedOn = nil
    }

    public func nextImage() throws -> CapturedImage {
        if let first = pending {
            pending = nil
            return first
        }
        do {
            return try read()
        } catch SourceError.endOfStream {
            guard isFile else { throw SourceError.endOfStream }
            try rewind()
            return try read()
        }
    }

    private func read() throws -> CapturedImage {
        guard let reader else { throw SourceError.cannotOpen("not open") }
        let picture: VideoReader.Picture?
        do {
            picture = try reader.readPicture()
        } catch let refused as VideoReader.JPEGsRefused {
            throw refused
        } catch let error as AVError where error.code == AVError.timedOut {
            throw SourceError.timeout("\(error)")
        } catch {
            throw SourceError.vanished("\(error)")
        }
        guard let picture else { throw SourceError.endOfStream }
        return CapturedImage(picture: picture.picture, sourceUnit: try unit(of: picture, reader: reader))
    }

    /// The unit to pass on beside `picture`, when this session passes one on.
    private func unit(of picture: VideoReader.Picture, reader: VideoReader) throws -> SourceUnit? {
        guard let passedOn else { return nil }
        if passedOn == .h264, reader.reorders {
            // Found only now (the stream did not say at its start): the
            // units already out cannot go on, so start again without them.
            reorders = true
            throw SourceError.vanished("the stream reorders pictures (B-frames), so its own H.264 cannot be "
                                       + "passed on; reopening to encode it here")
        }
        guard let data = picture.unit else {
            if passedOn == .h264 { h264Units.restart() }
            return nil
        }
        switch passedOn {
        case .h264: return h264Units.unit(from: data, lostBefore: picture.lostBefore)
        case .mjpeg: return MJPEGUnitFilter.unit(from: data)
        }
    }

    /// A new filter for `reader`'s stream, knowing the container's SPS and PPS.
    private static func unitFilter(for reader: VideoReader) -> H264UnitFilter {
        H264UnitFilter(parameterSets: reader.unitCodec == .h264 ? reader.parameterSets : Data())
    }

    private func rewind() throws {
        guard let reader else { return }
        do {
            try reader.rewind()
            h264Units.restart()
        } catch {
            // Some inputs cannot seek (a raw H.264 stream): open it again instead.
            self.reader = nil
            do {
                let reopened = try makeReader()
                self.reader = reopened
                h264Units = Self.unitFilter(for: reopened)
                if reopened.unitCodec != passedOn { passedOn = nil }
            } catch {
                throw SourceError.cannotOpen("\(uri): \(error)")
            }
        }
    }
}

/// How a file source is paced.
public enum FilePace: String, Sendable { case native, max }
