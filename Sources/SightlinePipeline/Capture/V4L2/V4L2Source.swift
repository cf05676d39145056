import Foundation
import SightlineVision
import SightlineSupport

/// A V4L2 camera (`v4l2:/dev/videoN`): negotiates the mode nearest the
/// request, streams through mmap buffers, and turns each frame into a
/// picture (BGR at once; MJPEG kept as its JPEG and decoded when asked).
///
/// Threading: every method runs on the single capture thread that owns the
/// source (FrameSource's rule); nothing here is shared, so there is no lock.
///
/// Errors: open() throws `.cannotOpen` when the node is missing, busy or dies
/// while being set up, `.unsupported` when it is not a capture device or has
/// no format this source reads. nextImage() throws `.timeout` when no good
/// frame came in `frameTimeout` (the stream stays open) and `.vanished` when
/// a device call fails (unplugged: ENODEV; also EIO and any other errno
/// mid-stream, since only reopening can help). A vanished source has already
/// released the device, so the node can come back under the same name;
/// open() may be called again.
public final class V4L2Source: FrameSource {
    /// What the configuration asks for; the device may give something near it.
    public struct Request: Sendable, Equatable {
        public var width: Int
        public var height: Int
        public var fps: Double

        public init(width: Int = 640, height: Int = 480, fps: Double = 30) {
            self.width = width
            self.height = height
            self.fps = fps
        }
    }

    public let path: String
    public let request: Request
    public let pacing = SourcePacing.device
    /// How long nextImage() waits for a good frame before `.timeout`.
    public let frameTimeout: Duration
    /// How many mmap buffers to ask the driver for.
    public let bufferCount: Int

    private let device: any V4L2Device
    private let converter = V4L2FrameConverter()
    private var buffers = V4L2BufferPool()
    /// The format being streamed; nil while closed.
    private var streamingFormat: V4L2Format?
    private var card: String?

    /// A camera through libv4l2.
    /// Hand a camera's MJPEG on to JPEG viewers as it came (`video.passThrough`).
    public let passOn: Bool

    public convenience init(path: String, request: Request = Request(), passOn: Bool = true) {
        self.init(path: path, request: request, device: LinuxV4L2Device(), passOn: passOn)
    }

    /// A camera through any device implementation (tests pass a fake).
    public init(path: String, request: Request = Request(), device: any V4L2Device,
                frameTimeout: Duration = .seconds(2), bufferCount: Int = 4, passOn: Bool = true) {
        self.passOn = passOn
        self.path = path
        self.request = request
        self.device = device
        self.frameTimeout = frameTimeout
        self.bufferCount = bufferCount
    }

    deinit { close() }

    /// The card name once known ("HD Webcam (/dev/video0)"), else the path.
    public var name: String { card.map { "\($0) (\(path))" } ?? path }

    // MARK: FrameSource

    /// Opens the node (closing any earlier session), negotiates the format
    /// and frame rate, maps the buffers and starts streaming. Reports what
    /// the device actually gave. Capture thread only.
    public func open() throws -> SourceFormat {
        close()
        do {
            return try startSession()
        } catch {
            close()
            throw openingError(error)
        }
    }

    /// Waits up to `frameTimeout` for a frame, dequeues it, turns it into a
    /// picture (BGR, or MJPEG's JPEG copied out to be decoded when asked)
    /// and queues the buffer again. Corrupt frames are skipped. Capture thread only.
    public func nextImage() throws -> CapturedImage {
        guard let format = streamingFormat else { throw SourceError.vanished("\(path) is not open") }
        do {
            return try waitForImage(format: format)
        } catch let error as SourceError {
            throw error
        } catch {
            close()
            throw SourceError.vanished("\(path): \(error)")
        }
    }

    /// Stops streaming, unmaps the buffers and closes the node. Safe to call
    /// at any time, also after the device vanished. Capture thread only.
    public func close() {
        if streamingFormat != nil { _ = try? device.stopStreaming() }
        streamingFormat = nil
        buffers.release(on: device)
        device.close()
    }

    // MARK: Opening

    private func startSession() throws -> SourceFormat {
        try device.open(path: path)
        try checkCapabilities()
        let (format, mode) = try negotiateFormat()
        let fps = try negotiateFrameRate(mode: mode)
        try buffers.allocate(count: bufferCount, on: device)
        try buffers.queueAll(on: device)
        try device.startStreaming()
        streamingFormat = format
        let jpeg = format.fourCC == .mjpeg || format.fourCC == .jpeg
        return SourceFormat(width: format.width, height: format.height, fps: fps,
                            pixelFormat: format.fourCC.description, passedOn: passOn && jpeg ? .mjpeg : nil)
    }

    private func checkCapabilities() throws {
        let capabilities = try device.queryCapabilities()
        card = capabilities.card
        guard capabilities.canCapture, capabilities.canStream else {
            throw SourceError.unsupported("\(path) (\(capabilities.card)) is not a streaming video capture device")
        }
    }

    /// Chooses a mode, asks for it, and returns what the driver set.
    private func negotiateFormat() throws -> (V4L2Format, V4L2FormatChooser.Mode) {
        let (modes, offered) = try offeredModes()
        let wanted = V4L2Size(width: request.width, height: request.height)
        guard let mode = V4L2FormatChooser.choose(from: modes, size: wanted, fps: request.fps) else {
            let names = offered.map(\.description).joined(separator: ", ")
            throw SourceError.unsupported("\(path) offers no YUYV, MJPG, JPEG or BGR3 (only \(names))")
        }
        let asked = V4L2Format(fourCC: mode.fourCC, width: mode.size.width, height: mode.size.height)
        let given = try device.setFormat(asked)
        guard V4L2FormatChooser.supportedFormats.contains(given.fourCC), given.width > 0, given.height > 0 else {
            throw SourceError.unsupported("\(path) gave \(given) when asked for \(asked)")
        }
        return (given, mode)
    }

    /// Every (format, size) the device offers in a format this source reads.
    /// Without size enumeration, the wanted size stands in (S_FMT will clamp it).
    private func offeredModes() throws -> ([V4L2FormatChooser.Mode], [V4L2FourCC]) {
        let described = try device.formats().map(\.fourCC)
        let offered = described.isEmpty ? V4L2FormatChooser.supportedFormats : described
        let wanted = V4L2Size(width: request.width, height: request.height)
        var modes: [V4L2FormatChooser.Mode] = []
        for fourCC in offered where V4L2FormatChooser.supportedFormats.contains(fourCC) {
            let sizes = try device.frameSizes(for: fourCC)?.candidates(near: wanted) ?? [wanted]
            for size in sizes {
                let maxFPS = try device.frameIntervals(for: fourCC, size: size)?.maxFPS
                modes.append(V4L2FormatChooser.Mode(fourCC: fourCC, size: size, maxFPS: maxFPS))
            }
        }
        return (modes, offered)
    }

    /// Asks for the requested rate and returns the rate the device reports,
    /// or the best guess when it reports none.
    private func negotiateFrameRate(mode: V4L2FormatChooser.Mode) throws -> Double {
        let interval = try device.setFrameInterval(V4L2Fraction(fps: request.fps)) ?? device.frameInterval()
        if let fps = interval?.fps { return fps }
        return mode.maxFPS.map { min($0, request.fps) } ?? request.fps
    }

    private func openingError(_ error: any Error) -> SourceError {
        if let error = error as? SourceError { return error }
        return .cannotOpen("\(path): \(error)")
    }

    // MARK: Streaming

    /// Dequeues until a frame converts or the deadline passes.
    private func waitForImage(format: V4L2Format) throws -> CapturedImage {
        let deadline = ContinuousClock.now + frameTimeout
        var problem = "no frame"
        while true {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero,
                  try device.waitForFrame(timeoutMilliseconds: Self.milliseconds(remaining)) else {
                throw SourceError.timeout("\(path): \(problem) in \(frameTimeout)")
            }
            guard let buffer = try device.dequeueBuffer() else { continue }
            switch try convertAndRequeue(buffer, format: format) {
            case .success(let image): return image
            case .failure(let badFrame): problem = "only bad frames (\(badFrame))"
            }
        }
    }

    /// Converts a dequeued buffer and always queues it again, good frame or
    /// bad; only the requeue's failure (a device error) is thrown.
    private func convertAndRequeue(_ buffer: V4L2DequeuedBuffer,
                                   format: V4L2Format) throws -> Result<CapturedImage, V4L2FrameConverter.BadFrame> {
        let converted = Result { try image(in: buffer, format: format) }
        try device.queueBuffer(index: buffer.index)
        return converted.mapError { $0 as? V4L2FrameConverter.BadFrame ?? .init(description: "\($0)") }
    }

    private func image(in buffer: V4L2DequeuedBuffer, format: V4L2Format) throws -> CapturedImage {
        guard !buffer.hasError else { throw V4L2FrameConverter.BadFrame(description: "driver flagged the frame") }
        guard let bytes = buffers.bytes(of: buffer) else {
            throw V4L2FrameConverter.BadFrame(description: "driver returned unknown buffer \(buffer.index)")
        }
        let (picture, jpeg) = try converter.picture(from: bytes, format: format)
        // A camera's MJPEG goes on to JPEG viewers as it came (the converter's
        // copy: the buffer goes back to the driver).
        let unit = passOn ? jpeg.flatMap(MJPEGUnitFilter.unit(from:)) : nil
        return CapturedImage(picture: picture, sourceUnit: unit)
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(seconds) * 1000 + Int((attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }
}
