import CSightlineV4L2
import Foundation
import SightlineVision
import SightlineSupport

/// The real V4L2 device: ioctls through libv4l2 (via the CSightlineV4L2 shim),
/// which also converts formats a camera cannot give natively.
///
/// Ownership: used only by the capture thread that owns its source.
public final class LinuxV4L2Device: V4L2Device {
    private var fd: Int32 = -1
    private let captureType = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
    private let mmapMemory = V4L2_MEMORY_MMAP.rawValue

    public init() {}

    deinit { close() }

    // MARK: Opening

    public func open(path: String) throws {
        close()
        fd = try Self.call("open") { sl_v4l2_open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC) }
    }

    public func close() {
        guard fd >= 0 else { return }
        // Not retried on EINTR: on Linux the descriptor is released either way.
        _ = sl_v4l2_close(fd)
        fd = -1
    }

    // MARK: Enumeration

    public func queryCapabilities() throws -> V4L2Capabilities {
        var cap = v4l2_capability()
        try ioctl(SL_VIDIOC_QUERYCAP, "VIDIOC_QUERYCAP", &cap)
        let hasDeviceCaps = cap.capabilities & UInt32(V4L2_CAP_DEVICE_CAPS) != 0
        return V4L2Capabilities(driver: Self.string(cap.driver), card: Self.string(cap.card),
                                busInfo: Self.string(cap.bus_info),
                                deviceCaps: hasDeviceCaps ? cap.device_caps : cap.capabilities)
    }

    public func formats() throws -> [V4L2FormatDescription] {
        var result: [V4L2FormatDescription] = []
        while true {
            var desc = v4l2_fmtdesc()
            desc.index = UInt32(result.count)
            desc.type = captureType
            guard try ioctlUnlessUnsupported(SL_VIDIOC_ENUM_FMT, "VIDIOC_ENUM_FMT", &desc) else { return result }
            result.append(V4L2FormatDescription(fourCC: V4L2FourCC(rawValue: desc.pixelformat),
                                                description: Self.string(desc.description), flags: desc.flags))
        }
    }

    public func frameSizes(for fourCC: V4L2FourCC) throws -> V4L2FrameSizes? {
        var sizes: [V4L2Size] = []
        while true {
            var entry = v4l2_frmsizeenum()
            entry.index = UInt32(sizes.count)
            entry.pixel_format = fourCC.rawValue
            guard try ioctlUnlessUnsupported(SL_VIDIOC_ENUM_FRAMESIZES, "VIDIOC_ENUM_FRAMESIZES", &entry) else {
                return sizes.isEmpty ? nil : .discrete(sizes)
            }
            guard entry.type == V4L2_FRMSIZE_TYPE_DISCRETE.rawValue else { return Self.stepwise(entry.stepwise) }
            sizes.append(V4L2Size(width: Int(entry.discrete.width), height: Int(entry.discrete.height)))
        }
    }

    public func frameIntervals(for fourCC: V4L2FourCC, size: V4L2Size) throws -> V4L2FrameIntervals? {
        var intervals: [V4L2Fraction] = []
        while true {
            var entry = v4l2_frmivalenum()
            entry.index = UInt32(intervals.count)
            entry.pixel_format = fourCC.rawValue
            entry.width = UInt32(size.width)
            entry.height = UInt32(size.height)
            guard try ioctlUnlessUnsupported(SL_VIDIOC_ENUM_FRAMEINTERVALS, "VIDIOC_ENUM_FRAMEINTERVALS", &entry) else {
                return intervals.isEmpty ? nil : .discrete(intervals)
            }
            guard entry.type == V4L2_FRMIVAL_TYPE_DISCRETE.rawValue else {
                return .stepwise(min: Self.fraction(entry.stepwise.min), max: Self.fraction(entry.stepwise.max))
            }
            intervals.append(Self.fraction(entry.discrete))
        }
    }

    // MARK: Format and frame rate

    public func setFormat(_ format: V4L2Format) throws -> V4L2Format {
        var request = v4l2_format()
        request.type = captureType
        request.fmt.pix.width = UInt32(format.width)
        request.fmt.pix.height = UInt32(format.height)
        request.fmt.pix.pixelformat = format.fourCC.rawValue
        request.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        try ioctl(SL_VIDIOC_S_FMT, "VIDIOC_S_FMT", &request)
        return Self.format(request.fmt.pix)
    }

    public func format() throws -> V4L2Format {
        var current = v4l2_format()
        current.type = captureType
        try ioctl(SL_VIDIOC_G_FMT, "VIDIOC_G_FMT", &current)
        return Self.format(current.fmt.pix)
    }

    public func setFrameInterval(_ interval: V4L2Fraction) throws -> V4L2Fraction? {
        guard var parm = try streamParameters(),
              parm.parm.capture.capability & UInt32(V4L2_CAP_TIMEPERFRAME) != 0 else { return nil }
        parm.parm.capture.timeperframe = v4l2_fract(numerator: interval.numerator, denominator: interval.denominator)
        guard try ioctlUnlessUnsupported(SL_VIDIOC_S_PARM, "VIDIOC_S_PARM", &parm) else { return nil }
        return Self.fraction(parm.parm.capture.timeperframe)
    }

    public func frameInterval() throws -> V4L2Fraction? {
        guard let parm = try streamParameters() else { return nil }
        let interval = Self.fraction(parm.parm.capture.timeperframe)
        return interval.fps == nil ? nil : interval
    }

    private func streamParameters() throws -> v4l2_streamparm? {
        var parm = v4l2_streamparm()
        parm.type = captureType
        return try ioctlUnlessUnsupported(SL_VIDIOC_G_PARM, "VIDIOC_G_PARM", &parm) ? parm : nil
    }

    // MARK: Buffers

    public func requestBuffers(count: Int) throws -> Int {
        var request = v4l2_requestbuffers()
        request.count = UInt32(count)
        request.type = captureType
        request.memory = mmapMemory
        try ioctl(SL_VIDIOC_REQBUFS, "VIDIOC_REQBUFS", &request)
        return Int(request.count)
    }

    public func queryBuffer(index: Int) throws -> V4L2BufferInfo {
        var buffer = bufferRequest(index: index)
        try ioctl(SL_VIDIOC_QUERYBUF, "VIDIOC_QUERYBUF", &buffer)
        return V4L2BufferInfo(index: index, offset: Int(buffer.m.offset), length: Int(buffer.length))
    }

    public func mapBuffer(_ info: V4L2BufferInfo) throws -> UnsafeMutableRawBufferPointer {
        let start = try Self.call("mmap buffer \(info.index)", failed: { $0 == nil }) {
            sl_v4l2_mmap(fd, info.length, Int64(info.offset))
        }
        return UnsafeMutableRawBufferPointer(start: start, count: info.length)
    }

    public func unmapBuffer(_ memory: UnsafeMutableRawBufferPointer) {
        guard let start = memory.baseAddress else { return }
        _ = sl_v4l2_munmap(start, memory.count)
    }

    public func queueBuffer(index: Int) throws {
        var buffer = bufferRequest(index: index)
        try ioctl(SL_VIDIOC_QBUF, "VIDIOC_QBUF", &buffer)
    }

    public func dequeueBuffer() throws -> V4L2DequeuedBuffer? {
        var buffer = bufferRequest(index: 0)
        do {
            try ioctl(SL_VIDIOC_DQBUF, "VIDIOC_DQBUF", &buffer)
        } catch let error as V4L2Error where error.isWouldBlock {
            return nil
        }
        return V4L2DequeuedBuffer(index: Int(buffer.index), bytesUsed: Int(buffer.bytesused),
                                  sequence: buffer.sequence,
                                  hasError: buffer.flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0)
    }

    public func startStreaming() throws {
        var type = Int32(captureType)
        try ioctl(SL_VIDIOC_STREAMON, "VIDIOC_STREAMON", &type)
    }

    public func stopStreaming() throws {
        var type = Int32(captureType)
        try ioctl(SL_VIDIOC_STREAMOFF, "VIDIOC_STREAMOFF", &type)
    }

    public func waitForFrame(timeoutMilliseconds: Int) throws -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = try Self.call("poll") { poll(&descriptor, 1, Int32(clamping: timeoutMilliseconds)) }
        return ready > 0
    }

    // MARK: Calls and errno

    /// The one place errno becomes a Swift error: runs `body` (again after
    /// EINTR) and throws V4L2Error when `failed` says the result is a failure.
    private static func call<T>(_ operation: @autoclosure () -> String, failed: (T) -> Bool,
                                _ body: () -> T) throws -> T {
        while true {
            let result = body()
            guard failed(result) else { return result }
            let code = errno
            if code == EINTR { continue }
            throw V4L2Error(operation: operation(), code: code)
        }
    }

    private static func call(_ operation: @autoclosure () -> String, _ body: () -> Int32) throws -> Int32 {
        try call(operation(), failed: { $0 == -1 }, body)
    }

    private func ioctl<T>(_ request: UInt, _ name: String, _ argument: inout T) throws {
        let fd = self.fd
        _ = try withUnsafeMutablePointer(to: &argument) { pointer in
            try Self.call(name) { sl_v4l2_ioctl(fd, request, pointer) }
        }
    }

    /// An ioctl whose EINVAL/ENOTTY means "no more entries" or "not implemented": false then.
    private func ioctlUnlessUnsupported<T>(_ request: UInt, _ name: String, _ argument: inout T) throws -> Bool {
        do {
            try ioctl(request, name, &argument)
            return true
        } catch let error as V4L2Error where error.isNotSupported {
            return false
        }
    }

    // MARK: Conversions from the C structs

    private func bufferRequest(index: Int) -> v4l2_buffer {
        var buffer = v4l2_buffer()
        buffer.index = UInt32(index)
        buffer.type = captureType
        buffer.memory = mmapMemory
        return buffer
    }

    private static func format(_ pix: v4l2_pix_format) -> V4L2Format {
        V4L2Format(fourCC: V4L2FourCC(rawValue: pix.pixelformat), width: Int(pix.width), height: Int(pix.height),
                   bytesPerLine: Int(pix.bytesperline), sizeImage: Int(pix.sizeimage))
    }

    private static func fraction(_ value: v4l2_fract) -> V4L2Fraction {
        V4L2Fraction(numerator: value.numerator, denominator: value.denominator)
    }

    private static func stepwise(_ value: v4l2_frmsize_stepwise) -> V4L2FrameSizes {
        .stepwise(min: V4L2Size(width: Int(value.min_width), height: Int(value.min_height)),
                  max: V4L2Size(width: Int(value.max_width), height: Int(value.max_height)),
                  step: V4L2Size(width: Int(value.step_width), height: Int(value.step_height)))
    }

    /// A NUL-terminated fixed-size C char array (a Swift tuple) as a String.
    private static func string<T>(_ tuple: T) -> String {
        withUnsafeBytes(of: tuple) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }
}
