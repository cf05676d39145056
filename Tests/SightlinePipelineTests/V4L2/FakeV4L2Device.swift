import CSightlineV4L2
import Foundation
@testable import SightlineVision
@testable import SightlinePipeline
import SightlineTesting

/// An in-memory V4L2 camera with real buffers, behaving like a vb2/uvcvideo
/// driver where it matters to the source: S_FMT clamps to the nearest mode,
/// buffers cycle FIFO between the queue and the application, REQBUFS is
/// refused while streaming or mapped, and after `unplug()` every call on the
/// open node fails with ENODEV and opening fails with ENOENT until `replug()`.
///
/// Each DQBUF writes the next frame of `picture` (a BGR image) into the
/// buffer's memory in the negotiated pixel format: YUYV by a BT.601 encoder,
/// MJPEG by JPEGEncoder, BGR24 by copying. Misuse by the caller is recorded
/// in `violations` (tests expect it empty).
///
/// Ownership: one test's, on one thread.
final class FakeV4L2Device: V4L2Device {
    struct Mode {
        var fourCC: V4L2FourCC
        var width: Int
        var height: Int
        var fps: [Double] = [30]
    }

    // MARK: Configuration
    let path: String
    var capabilities: V4L2Capabilities
    var modes: [Mode]
    /// False: ENUM_FRAMESIZES is not implemented (EINVAL), S_FMT still clamps.
    var enumeratesSizes = true
    var supportsFrameInterval = true
    /// Extra bytes at the end of each uncompressed row (bytesperline > width * bpp).
    var rowPadding = 0
    var maxBuffers = 8
    /// The errno mmap of this buffer index fails with (nil: it works).
    var mapFailure: (index: Int, code: Int32)?
    var picture: (_ frameNumber: Int, _ width: Int, _ height: Int) -> ImageBuffer = V4L2TestPattern.frame

    // MARK: Conditions a test changes mid-stream
    private(set) var isPresent = true
    /// No frame ready: poll times out.
    var stalled = false
    /// The next dequeue fails with this errno.
    var failNextDequeue: Int32?
    /// The next frame comes with V4L2_BUF_FLAG_ERROR.
    var flagNextFrame = false
    /// The next frame's bytes are garbage (a broken MJPEG frame, a short YUYV one).
    var corruptNextFrame = false

    // MARK: Observations
    private(set) var isOpen = false
    private(set) var isStreaming = false
    private(set) var openCount = 0
    private(set) var currentFormat: V4L2Format
    private(set) var interval = V4L2Fraction(numerator: 1, denominator: 30)
    private(set) var requestedFormats: [V4L2Format] = []
    private(set) var queue: [Int] = []
    private(set) var queueLog: [Int] = []
    private(set) var dequeueLog: [Int] = []
    private(set) var framesProduced = 0
    private(set) var lastPollTimeout: Int?
    private(set) var violations: [String] = []
    var mappedCount: Int { mapped.filter { $0 }.count }
    var bufferCount: Int { buffers.count }

    private var buffers: [UnsafeMutableRawBufferPointer] = []
    private var mapped: [Bool] = []
    private var everAllocated: [UnsafeMutableRawBufferPointer] = []
    private var handleDead = false
    private let encoder = try? JPEGEncoder(quality: 92)

    init(path: String = "/dev/video0", card: String = "Fake Camera", modes: [Mode]) {
        self.path = path
        self.capabilities = V4L2Capabilities(driver: "fake", card: card, busInfo: "fake:0",
                                             deviceCaps: UInt32(V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_STREAMING))
        self.modes = modes
        let first = modes.first ?? Mode(fourCC: .yuyv, width: 640, height: 480)
        currentFormat = V4L2Format(fourCC: first.fourCC, width: first.width, height: first.height)
    }

    deinit { everAllocated.forEach { $0.deallocate() } }

    func unplug() {
        isPresent = false
        handleDead = isOpen
    }

    func replug() { isPresent = true }

    // MARK: V4L2Device

    func open(path: String) throws {
        close()
        guard isPresent, path == self.path else { throw V4L2Error(operation: "open \(path)", code: ENOENT) }
        if mappedCount > 0 { violations.append("open while \(mappedCount) buffers of the last session are mapped") }
        isOpen = true
        handleDead = false
        openCount += 1
        buffers = []
        mapped = []
        queue = []
    }

    func close() {
        guard isOpen else { return }
        if mappedCount > 0 { violations.append("close with \(mappedCount) buffers still mapped") }
        isOpen = false
        isStreaming = false
        queue = []
    }

    func queryCapabilities() throws -> V4L2Capabilities {
        try check("VIDIOC_QUERYCAP")
        return capabilities
    }

    func formats() throws -> [V4L2FormatDescription] {
        try check("VIDIOC_ENUM_FMT")
        var seen: [V4L2FourCC] = []
        for mode in modes where !seen.contains(mode.fourCC) { seen.append(mode.fourCC) }
        return seen.map { V4L2FormatDescription(fourCC: $0) }
    }

    func frameSizes(for fourCC: V4L2FourCC) throws -> V4L2FrameSizes? {
        try check("VIDIOC_ENUM_FRAMESIZES")
        let sizes = modes.filter { $0.fourCC == fourCC }.map { V4L2Size(width: $0.width, height: $0.height) }
        return enumeratesSizes && !sizes.isEmpty ? .discrete(sizes) : nil
    }

    func frameIntervals(for fourCC: V4L2FourCC, size: V4L2Size) throws -> V4L2FrameIntervals? {
        try check("VIDIOC_ENUM_FRAMEINTERVALS")
        guard enumeratesSizes, let mode = mode(fourCC, size) else { return nil }
        return .discrete(mode.fps.map { V4L2Fraction(fps: $0) })
    }

    func setFormat(_ asked: V4L2Format) throws -> V4L2Format {
        try check("VIDIOC_S_FMT")
        requestedFormats.append(asked)
        guard buffers.isEmpty else { throw V4L2Error(operation: "VIDIOC_S_FMT", code: EBUSY) }
        let fourCC = modes.contains { $0.fourCC == asked.fourCC } ? asked.fourCC : modes[0].fourCC
        let nearest = modes.filter { $0.fourCC == fourCC }
            .min { distance($0, asked) < distance($1, asked) } ?? modes[0]
        currentFormat = layout(nearest)
        interval = V4L2Fraction(fps: nearest.fps.max() ?? 30)
        return currentFormat
    }

    func format() throws -> V4L2Format {
        try check("VIDIOC_G_FMT")
        return currentFormat
    }

    func setFrameInterval(_ asked: V4L2Fraction) throws -> V4L2Fraction? {
        try check("VIDIOC_S_PARM")
        guard supportsFrameInterval, let wanted = asked.fps,
              let rates = mode(currentFormat.fourCC, currentFormat.size)?.fps,
              let nearest = rates.min(by: { abs($0 - wanted) < abs($1 - wanted) }) else { return nil }
        interval = V4L2Fraction(fps: nearest)
        return interval
    }

    func frameInterval() throws -> V4L2Fraction? {
        try check("VIDIOC_G_PARM")
        return supportsFrameInterval ? interval : nil
    }

    func requestBuffers(count: Int) throws -> Int {
        try check("VIDIOC_REQBUFS")
        guard !isStreaming, mappedCount == 0 else {
            violations.append("REQBUFS \(count) while streaming or mapped")
            throw V4L2Error(operation: "VIDIOC_REQBUFS", code: EBUSY)
        }
        buffers = (0..<min(count, maxBuffers)).map { _ in allocate(currentFormat.sizeImage) }
        mapped = Array(repeating: false, count: buffers.count)
        queue = []
        return buffers.count
    }

    func queryBuffer(index: Int) throws -> V4L2BufferInfo {
        try check("VIDIOC_QUERYBUF")
        guard buffers.indices.contains(index) else { throw V4L2Error(operation: "VIDIOC_QUERYBUF", code: EINVAL) }
        return V4L2BufferInfo(index: index, offset: index * 0x10_0000, length: buffers[index].count)
    }

    func mapBuffer(_ info: V4L2BufferInfo) throws -> UnsafeMutableRawBufferPointer {
        try check("mmap")
        let index = info.offset / 0x10_0000
        guard buffers.indices.contains(index), info.length == buffers[index].count else {
            violations.append("mmap of unknown buffer \(info)")
            throw V4L2Error(operation: "mmap", code: EINVAL)
        }
        if let failure = mapFailure, failure.index == index { throw V4L2Error(operation: "mmap", code: failure.code) }
        if mapped[index] { violations.append("buffer \(index) mapped twice") }
        mapped[index] = true
        return buffers[index]
    }

    func unmapBuffer(_ memory: UnsafeMutableRawBufferPointer) {
        guard let index = buffers.firstIndex(where: { $0.baseAddress == memory.baseAddress }),
              memory.count == buffers[index].count, mapped[index] else {
            violations.append("munmap of memory that is not a mapped buffer")
            return
        }
        mapped[index] = false
    }

    func queueBuffer(index: Int) throws {
        try check("VIDIOC_QBUF")
        guard buffers.indices.contains(index), !queue.contains(index) else {
            violations.append("QBUF \(index) (queued: \(queue), buffers: \(buffers.count))")
            throw V4L2Error(operation: "VIDIOC_QBUF", code: EINVAL)
        }
        queue.append(index)
        queueLog.append(index)
    }

    func dequeueBuffer() throws -> V4L2DequeuedBuffer? {
        try check("VIDIOC_DQBUF")
        if let code = failNextDequeue {
            failNextDequeue = nil
            throw V4L2Error(operation: "VIDIOC_DQBUF", code: code)
        }
        guard isStreaming else {
            violations.append("DQBUF while not streaming")
            throw V4L2Error(operation: "VIDIOC_DQBUF", code: EINVAL)
        }
        guard !stalled, !queue.isEmpty else { return nil }
        let index = queue.removeFirst()
        dequeueLog.append(index)
        return fill(index)
    }

    func startStreaming() throws {
        try check("VIDIOC_STREAMON")
        guard !buffers.isEmpty else { throw V4L2Error(operation: "VIDIOC_STREAMON", code: EINVAL) }
        isStreaming = true
    }

    func stopStreaming() throws {
        try check("VIDIOC_STREAMOFF")
        isStreaming = false
        queue = []
    }

    func waitForFrame(timeoutMilliseconds: Int) throws -> Bool {
        lastPollTimeout = timeoutMilliseconds
        guard isOpen else { throw V4L2Error(operation: "poll", code: EBADF) }
        if handleDead { return true }  // POLLERR: the next call reports ENODEV
        return isStreaming && !stalled && !queue.isEmpty
    }

    // MARK: Driver internals

    /// Every call on a node: EBADF when not open, ENODEV once unplugged.
    private func check(_ operation: String) throws {
        guard isOpen else {
            violations.append("\(operation) on a closed node")
            throw V4L2Error(operation: operation, code: EBADF)
        }
        if handleDead { throw V4L2Error(operation: operation, code: ENODEV) }
    }

    private func mode(_ fourCC: V4L2FourCC, _ size: V4L2Size) -> Mode? {
        modes.first { $0.fourCC == fourCC && $0.width == size.width && $0.height == size.height }
    }

    private func distance(_ mode: Mode, _ asked: V4L2Format) -> Int {
        abs(mode.width - asked.width) + abs(mode.height - asked.height)
    }

    private func layout(_ mode: Mode) -> V4L2Format {
        let bytesPerPixel = mode.fourCC == .yuyv ? 2 : (mode.fourCC == .bgr24 ? 3 : 0)
        let bytesPerLine = bytesPerPixel == 0 ? 0 : mode.width * bytesPerPixel + rowPadding
        let sizeImage = bytesPerPixel == 0 ? mode.width * mode.height * 2 : bytesPerLine * mode.height
        return V4L2Format(fourCC: mode.fourCC, width: mode.width, height: mode.height,
                          bytesPerLine: bytesPerLine, sizeImage: sizeImage)
    }

    private func allocate(_ count: Int) -> UnsafeMutableRawBufferPointer {
        let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 64)
        memory.initializeMemory(as: UInt8.self, repeating: 0)
        everAllocated.append(memory)
        return memory
    }

    /// Writes the next frame into buffer `index`, as the hardware would.
    private func fill(_ index: Int) -> V4L2DequeuedBuffer {
        let memory = buffers[index]
        let image = picture(framesProduced, currentFormat.width, currentFormat.height)
        var used = write(image, into: memory)
        if corruptNextFrame {
            memory.initializeMemory(as: UInt8.self, repeating: 0x5A)
            used = min(used, 64)
            corruptNextFrame = false
        }
        defer { framesProduced += 1; flagNextFrame = false }
        return V4L2DequeuedBuffer(index: index, bytesUsed: used, sequence: UInt32(framesProduced),
                                  hasError: flagNextFrame)
    }

    /// The last JPEG frame written (what a camera's MJPEG frame was, byte for byte).
    private(set) var lastJPEG: Data?

    private func write(_ image: ImageBuffer, into memory: UnsafeMutableRawBufferPointer) -> Int {
        guard let base = memory.baseAddress else { return 0 }
        switch currentFormat.fourCC {
        case .yuyv:
            V4L2TestPattern.yuyv(image, stride: currentFormat.bytesPerLine, into: base)
            return currentFormat.sizeImage
        case .bgr24:
            V4L2TestPattern.bgr24(image, stride: currentFormat.bytesPerLine, into: base)
            return currentFormat.sizeImage
        default:
            guard let jpeg = try? encoder?.encode(image), jpeg.count <= memory.count else {
                violations.append("fake could not encode a JPEG frame")
                return 0
            }
            jpeg.copyBytes(to: memory)
            lastJPEG = jpeg
            return jpeg.count
        }
    }
}
