import Foundation
import Testing
@testable import SightlineVision
@testable import SightlinePipeline
import SightlineTesting

/// V4L2Source against FakeV4L2Device: negotiation, the buffer cycle, pixel
/// content, and the device going away and coming back.
@Suite struct V4L2SourceTests {
    typealias Mode = FakeV4L2Device.Mode

    /// A typical UVC webcam: YUYV is slow at high resolutions, MJPEG is not.
    static let webcamModes: [Mode] = [
        Mode(fourCC: .yuyv, width: 640, height: 480, fps: [30, 15]),
        Mode(fourCC: .yuyv, width: 1280, height: 720, fps: [10, 5]),
        Mode(fourCC: .mjpeg, width: 640, height: 480, fps: [30, 15]),
        Mode(fourCC: .mjpeg, width: 1280, height: 720, fps: [30, 15]),
        Mode(fourCC: .mjpeg, width: 1920, height: 1080, fps: [30, 15]),
    ]

    static func source(_ device: FakeV4L2Device, width: Int = 64, height: Int = 48, fps: Double = 30,
                       timeout: Duration = .seconds(2)) -> V4L2Source {
        V4L2Source(path: device.path, request: .init(width: width, height: height, fps: fps), device: device,
                   frameTimeout: timeout)
    }

    static func smallCamera(_ fourCC: V4L2FourCC, rowPadding: Int = 0) -> FakeV4L2Device {
        let device = FakeV4L2Device(modes: [Mode(fourCC: fourCC, width: 64, height: 48)])
        device.rowPadding = rowPadding
        return device
    }

    // MARK: Negotiation

    struct NegotiationCase: Sendable, CustomTestStringConvertible {
        var width: Int, height: Int, fps: Double
        var expected: SourceFormat
        var testDescription: String { "\(width)x\(height)@\(fps) -> \(expected)" }
    }

    @Test(arguments: [
        NegotiationCase(width: 640, height: 480, fps: 30,
                        expected: SourceFormat(width: 640, height: 480, fps: 30, pixelFormat: "YUYV")),
        NegotiationCase(width: 1280, height: 720, fps: 30,
                        expected: SourceFormat(width: 1280, height: 720, fps: 30, pixelFormat: "MJPG", passedOn: .mjpeg)),
        NegotiationCase(width: 1280, height: 720, fps: 5,
                        expected: SourceFormat(width: 1280, height: 720, fps: 5, pixelFormat: "YUYV")),
        NegotiationCase(width: 1920, height: 1080, fps: 15,
                        expected: SourceFormat(width: 1920, height: 1080, fps: 15, pixelFormat: "MJPG", passedOn: .mjpeg)),
    ])
    func choosesTheModeNearestTheRequest(_ example: NegotiationCase) throws {
        let device = FakeV4L2Device(modes: Self.webcamModes)
        let source = Self.source(device, width: example.width, height: example.height, fps: example.fps)
        #expect(try source.open() == example.expected)
        #expect(device.requestedFormats.map(\.description) == ["\(example.expected.pixelFormat) \(example.width)x\(example.height)"])
        source.close()
        #expect(device.violations.isEmpty)
    }

    @Test func reportsWhatTheDeviceGaveWhenItClampsTheRequest() throws {
        let device = FakeV4L2Device(modes: [
            Mode(fourCC: .yuyv, width: 640, height: 480, fps: [30]),
            Mode(fourCC: .yuyv, width: 1280, height: 720, fps: [10, 5]),
        ])
        device.enumeratesSizes = false
        let source = Self.source(device, width: 1920, height: 1080, fps: 30)

        let format = try source.open()

        #expect(device.requestedFormats == [V4L2Format(fourCC: .yuyv, width: 1920, height: 1080)])
        #expect(format == SourceFormat(width: 1280, height: 720, fps: 10, pixelFormat: "YUYV"))
        let image = try source.nextImage().image
        #expect((image.width, image.height) == (1280, 720))
        source.close()
    }

    @Test func asksForTheNearestEnumeratedSize() throws {
        let device = FakeV4L2Device(modes: [
            Mode(fourCC: .yuyv, width: 320, height: 240),
            Mode(fourCC: .yuyv, width: 1280, height: 720),
        ])
        let source = Self.source(device, width: 1920, height: 1080)
        #expect(try source.open().width == 1280)
        #expect(device.requestedFormats == [V4L2Format(fourCC: .yuyv, width: 1280, height: 720)])
        source.close()
    }

    @Test func reportsTheRequestedRateWhenTheDeviceCannotSayItsOwn() throws {
        let device = Self.smallCamera(.yuyv)
        device.supportsFrameInterval = false
        device.enumeratesSizes = false
        let source = Self.source(device, fps: 25)
        #expect(try source.open().fps == 25)
        source.close()
    }

    @Test func refusesADeviceWithoutAFormatItReads() throws {
        let device = FakeV4L2Device(modes: [Mode(fourCC: V4L2FourCC("NV12"), width: 64, height: 48)])
        let source = Self.source(device)
        let error = #expect(throws: SourceError.self) { try source.open() }
        #expect(error?.kind == "unsupported")
        #expect(!device.isOpen)
    }

    @Test func refusesANodeThatIsNotACaptureDevice() throws {
        let device = Self.smallCamera(.yuyv)
        device.capabilities.deviceCaps = 0x0080_0000 | 0x0400_0000  // V4L2_CAP_META_CAPTURE | STREAMING
        let source = Self.source(device)
        let error = #expect(throws: SourceError.self) { try source.open() }
        #expect(error?.kind == "unsupported")
        #expect(!device.isOpen)
    }

    // MARK: The buffer cycle

    @Test func requeuesEveryBufferInOrderOverManyFrames() throws {
        let device = Self.smallCamera(.yuyv)
        let source = Self.source(device)
        _ = try source.open()
        let buffers = device.bufferCount
        #expect(buffers == 4)
        #expect(device.queue == [0, 1, 2, 3])

        for frame in 0..<50 {
            let image = try source.nextImage().image
            let (b, g, r) = image.pixel(x: 32, y: 24)
            let marker = Int(V4L2TestPattern.marker(frame: frame))
            #expect(abs(Int(b) - marker) <= 3 && abs(Int(g) - marker) <= 3 && abs(Int(r) - marker) <= 3,
                    "frame \(frame): centre \((b, g, r)), expected grey \(marker)")
            #expect(device.queue.count == buffers, "after frame \(frame) a buffer was not requeued")
        }

        let expectedOrder = (0..<50).map { $0 % buffers }
        #expect(device.dequeueLog == expectedOrder)
        #expect(device.queueLog == Array(0..<buffers) + expectedOrder)
        source.close()
        #expect(device.mappedCount == 0)
        #expect(!device.isOpen && !device.isStreaming)
        #expect(device.violations.isEmpty)
    }

    @Test func skipsAFrameTheDriverFlaggedAndRequeuesIt() throws {
        let device = Self.smallCamera(.yuyv)
        let source = Self.source(device)
        _ = try source.open()
        device.flagNextFrame = true

        let image = try source.nextImage().image

        #expect(device.dequeueLog == [0, 1])
        #expect(device.queue.count == 4)
        #expect(pixel(image, x: 32, y: 24, isNear: grey(V4L2TestPattern.marker(frame: 1)), tolerance: 3))
        source.close()
        #expect(device.violations.isEmpty)
    }

    @Test(arguments: [V4L2FourCC.mjpeg, .yuyv])
    func skipsACorruptFrame(_ fourCC: V4L2FourCC) throws {
        let device = Self.smallCamera(fourCC)
        let source = Self.source(device)
        _ = try source.open()
        device.corruptNextFrame = true

        let image = try source.nextImage().image

        #expect(device.dequeueLog == [0, 1])
        #expect(device.queue.count == 4)
        #expect(pixel(image, x: 32, y: 24, isNear: grey(V4L2TestPattern.marker(frame: 1)), tolerance: 6))
        source.close()
        #expect(device.violations.isEmpty)
    }

    @Test func timesOutWhenNoFrameComesAndKeepsStreaming() throws {
        let device = Self.smallCamera(.yuyv)
        let source = Self.source(device, timeout: .milliseconds(300))
        _ = try source.open()
        device.stalled = true

        let error = #expect(throws: SourceError.self) { try source.nextImage() }

        #expect(error?.kind == "timeout")
        #expect(device.lastPollTimeout.map { (1...300).contains($0) } == true)
        #expect(device.isStreaming)
        device.stalled = false
        #expect(try source.nextImage().image.width == 64)
        source.close()
    }

    @Test func nextImageBeforeOpenThrowsInsteadOfTouchingTheDevice() throws {
        let device = Self.smallCamera(.yuyv)
        let source = Self.source(device)
        let error = #expect(throws: SourceError.self) { try source.nextImage() }
        #expect(error != nil)
        #expect(device.violations.isEmpty)
    }

    // MARK: Pixels

    @Test(arguments: [0, 24])
    func convertsYUYVToBGR(rowPadding: Int) throws {
        let device = Self.smallCamera(.yuyv, rowPadding: rowPadding)
        let source = Self.source(device)
        #expect(try source.open().pixelFormat == "YUYV")
        let image = try source.nextImage().image
        try expectPattern(image, tolerance: 4)
        source.close()
    }

    @Test func decodesMJPEGToBGR() throws {
        let device = Self.smallCamera(.mjpeg)
        let source = Self.source(device)
        #expect(try source.open().pixelFormat == "MJPG")
        let captured = try source.nextImage()
        // Kept as the JPEG: decoded only when asked, a smaller copy without the full picture.
        #expect(!captured.picture.isConverted)
        let half = try captured.picture.scaled(width: 32, height: 24)
        #expect((half.width, half.height) == (32, 24))
        #expect(!captured.picture.isConverted)
        #expect(pixel(half, x: 2, y: 2, isNear: V4L2TestPattern.red, tolerance: 12))
        try expectPattern(captured.image, tolerance: 12)
        // The camera's own JPEG goes on beside the pixels, byte for byte.
        #expect(captured.sourceUnit?.codec == .mjpeg)
        #expect(captured.sourceUnit?.data == device.lastJPEG)
        source.close()
    }

    @Test func copiesBGR24WhenOnlyEmulatedBGRIsUsable() throws {
        let device = FakeV4L2Device(modes: [
            Mode(fourCC: V4L2FourCC("NV12"), width: 64, height: 48),
            Mode(fourCC: .bgr24, width: 64, height: 48),
        ])
        device.rowPadding = 8
        let source = Self.source(device)
        #expect(try source.open().pixelFormat == "BGR3")
        let image = try source.nextImage().image
        try expectPattern(image, tolerance: 0)
        source.close()
    }

    // MARK: Losing the device

    @Test(arguments: [ENODEV, EIO])
    func deviceFailingMidStreamIsVanishedAndReleased(code: Int32) throws {
        let device = Self.smallCamera(.yuyv)
        let source = Self.source(device)
        _ = try source.open()
        _ = try source.nextImage()
        device.failNextDequeue = code

        let error = #expect(throws: SourceError.self) { try source.nextImage() }

        #expect(error?.kind == "vanished")
        #expect(!device.isOpen)
        #expect(device.mappedCount == 0)
        #expect(device.violations.isEmpty)
    }

    @Test func unpluggedCameraVanishesCannotOpenUntilItIsBackThenStreamsAgain() throws {
        let device = Self.smallCamera(.mjpeg)
        let source = Self.source(device)
        let first = try source.open()
        for _ in 0..<3 { _ = try source.nextImage() }

        device.unplug()
        let vanished = #expect(throws: SourceError.self) { try source.nextImage() }
        #expect(vanished?.kind == "vanished")
        #expect(!device.isOpen, "the dead node must be closed so the camera can come back under its name")
        #expect(device.mappedCount == 0)

        for _ in 0..<2 {
            let refused = #expect(throws: SourceError.self) { try source.open() }
            #expect(refused?.kind == "cannotOpen")
            #expect(!device.isOpen)
        }

        device.replug()
        #expect(try source.open() == first)
        for _ in 0..<6 {
            let image = try source.nextImage().image
            #expect(pixel(image, x: 4, y: 4, isNear: V4L2TestPattern.red, tolerance: 12))
        }
        #expect(device.queue.count == device.bufferCount)
        source.close()
        #expect(device.mappedCount == 0)
        #expect(device.violations.isEmpty)
    }

    @Test func failingHalfwayThroughOpenReleasesWhatWasSetUp() throws {
        let device = Self.smallCamera(.yuyv)
        device.mapFailure = (index: 2, code: ENOMEM)
        let source = Self.source(device)

        let error = #expect(throws: SourceError.self) { try source.open() }

        #expect(error?.kind == "cannotOpen")
        #expect(!device.isOpen)
        #expect(device.mappedCount == 0)
        device.mapFailure = nil
        #expect(try source.open().pixelFormat == "YUYV")
        source.close()
        #expect(device.violations.isEmpty)
    }

    @Test func tooFewBuffersIsCannotOpen() throws {
        let device = Self.smallCamera(.yuyv)
        device.maxBuffers = 1
        let source = Self.source(device)
        let error = #expect(throws: SourceError.self) { try source.open() }
        #expect(error?.kind == "cannotOpen")
        #expect(!device.isOpen)
        #expect(device.violations.isEmpty)
    }

    @Test func reopeningAnOpenSourceStartsAFreshSession() throws {
        let device = Self.smallCamera(.yuyv)
        let source = Self.source(device)
        _ = try source.open()
        _ = try source.nextImage()
        _ = try source.open()
        #expect(device.openCount == 2)
        #expect(device.queue == [0, 1, 2, 3])
        _ = try source.nextImage()
        source.close()
        #expect(device.violations.isEmpty)
    }

    // MARK: Helpers

    private func grey(_ level: UInt8) -> V4L2TestPattern.BGR { (level, level, level) }

    private func expectPattern(_ image: ImageBuffer, tolerance: Int,
                               sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect((image.width, image.height, image.channels) == (64, 48, 3), sourceLocation: sourceLocation)
        for sample in V4L2TestPattern.quadrantSamples(width: image.width, height: image.height) {
            #expect(pixel(image, x: sample.x, y: sample.y, isNear: sample.colour, tolerance: tolerance),
                    "at \(sample.x),\(sample.y): \(image.pixel(x: sample.x, y: sample.y)) vs \(sample.colour)",
                    sourceLocation: sourceLocation)
        }
    }
}
