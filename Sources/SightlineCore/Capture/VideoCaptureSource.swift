import CSightlineOpenCV
import Foundation

/// A video file or a stream URL through OpenCV's FFmpeg backend.
/// Files loop at their end; streams treat their end as a failure, so the
/// capture loop reconnects with backoff.
///
/// Threads: used only on the capture thread that owns it.
public final class VideoCaptureSource: FrameSource {
    public enum Kind: Sendable { case file(pace: FilePace), stream }

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

    private var capture: OpaquePointer?
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

    public func open() throws -> SourceFormat {
        close()
        if case .file = kind, !FileManager.default.isReadableFile(atPath: uri) {
            throw SourceError.cannotOpen("no readable file at \(uri)")
        }
        var handle: OpaquePointer?
        do {
            try OpenCVError.check { slcv_capture_open(uri, &handle, $0) }
        } catch {
            throw SourceError.cannotOpen("\(uri): \(error)")
        }
        capture = handle
        let reported = slcv_capture_fps(handle)
        fps = fpsOverride ?? (reported.isFinite && reported > 0 && reported <= 240 ? reported : 25)
        let frames = slcv_capture_frame_count(handle)
        frameCount = frames.isFinite && frames >= 1 && frames < 1e9 ? Int(frames) : nil
        // Read one frame to learn the size, then rewind files so none is lost.
        let first = try read()
        if case .file = kind { try rewind() }
        return SourceFormat(width: first.width, height: first.height, fps: fps, pixelFormat: "ffmpeg")
    }

    public func close() {
        if let capture { slcv_capture_release(capture) }
        capture = nil
    }

    public func nextImage() throws -> CapturedImage {
        do {
            return CapturedImage(image: try read())
        } catch SourceError.endOfStream {
            guard case .file = kind else { throw SourceError.endOfStream }
            try rewind()
            return CapturedImage(image: try read())
        }
    }

    private func read() throws -> ImageBuffer {
        guard let capture else { throw SourceError.cannotOpen("not open") }
        var got: Int32 = 0
        var view = slcv_image()
        do {
            try OpenCVError.check { slcv_capture_read(capture, &got, &view, $0) }
        } catch {
            throw SourceError.vanished("\(error)")
        }
        guard got != 0 else { throw SourceError.endOfStream }
        return ImageBuffer(copying: view)
    }

    private func rewind() throws {
        guard let capture else { return }
        do {
            try OpenCVError.check { slcv_capture_rewind(capture, $0) }
        } catch {
            // Some containers cannot seek: reopen instead.
            slcv_capture_release(capture)
            self.capture = nil
            var handle: OpaquePointer?
            try OpenCVError.check { slcv_capture_open(uri, &handle, $0) }
            self.capture = handle
        }
    }
}

/// How a file source is paced.
public enum FilePace: String, Sendable { case native, max }
