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

    private var reader: VideoReader?
    /// The picture open() decoded to learn the size, given as the first frame.
    private var pending: ImageBuffer?
    private var fps = 0.0
    /// Frames in the file as its container reports them (nil for streams,
    /// or when it does not say); known once opened.
    public private(set) var frameCount: Int?

    public init(uri: String, kind: Kind, fpsOverride: Double? = nil) {
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
        try VideoReader(url: isFile ? "file:" + uri : uri, live: !isFile, timeout: Self.timeout)
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
        let first: ImageBuffer?
        do {
            first = try opened.read()
        } catch {
            close()
            throw SourceError.cannotOpen("\(uri): \(error)")
        }
        guard let first else {
            close()
            throw SourceError.cannotOpen("\(uri): no picture could be decoded")
        }
        pending = first
        return SourceFormat(width: first.width, height: first.height, fps: fps, pixelFormat: opened.info.codec)
    }

    public func close() {
        reader = nil
        pending = nil
    }

    public func nextImage() throws -> CapturedImage {
        if let first = pending {
            pending = nil
            return CapturedImage(image: first)
        }
        do {
            return CapturedImage(image: try read())
        } catch SourceError.endOfStream {
            guard isFile else { throw SourceError.endOfStream }
            try rewind()
            return CapturedImage(image: try read())
        }
    }

    private func read() throws -> ImageBuffer {
        guard let reader else { throw SourceError.cannotOpen("not open") }
        let image: ImageBuffer?
        do {
            image = try reader.read()
        } catch let error as AVError where error.code == AVError.timedOut {
            throw SourceError.timeout("\(error)")
        } catch {
            throw SourceError.vanished("\(error)")
        }
        guard let image else { throw SourceError.endOfStream }
        return image
    }

    private func rewind() throws {
        guard let reader else { return }
        do {
            try reader.rewind()
        } catch {
            // Some inputs cannot seek (a raw H.264 stream): open it again instead.
            self.reader = nil
            do {
                self.reader = try makeReader()
            } catch {
                throw SourceError.cannotOpen("\(uri): \(error)")
            }
        }
    }
}

/// How a file source is paced.
public enum FilePace: String, Sendable { case native, max }
