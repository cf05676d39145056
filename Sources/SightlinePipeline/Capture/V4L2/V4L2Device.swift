/// The V4L2 calls a capture source makes, one method per ioctl (or syscall),
/// in Swift types. LinuxV4L2Device makes them through libv4l2; tests use an
/// in-memory fake with real buffers.
///
/// Errors: every throwing method throws V4L2Error carrying the errno the
/// driver set. Ownership: a device is used only by the capture thread that
/// owns its source; implementations need no lock.
public protocol V4L2Device: AnyObject {
    /// Opens the node (closing any node opened before), non-blocking.
    func open(path: String) throws
    /// Closes the node. Safe to call when nothing is open or the device is gone.
    func close()

    /// VIDIOC_QUERYCAP.
    func queryCapabilities() throws -> V4L2Capabilities
    /// VIDIOC_ENUM_FMT for single-planar capture, every index.
    func formats() throws -> [V4L2FormatDescription]
    /// VIDIOC_ENUM_FRAMESIZES; nil when the driver does not enumerate sizes.
    func frameSizes(for fourCC: V4L2FourCC) throws -> V4L2FrameSizes?
    /// VIDIOC_ENUM_FRAMEINTERVALS; nil when the driver does not enumerate intervals.
    func frameIntervals(for fourCC: V4L2FourCC, size: V4L2Size) throws -> V4L2FrameIntervals?

    /// VIDIOC_S_FMT: asks for a format and returns the one the driver chose.
    func setFormat(_ format: V4L2Format) throws -> V4L2Format
    /// VIDIOC_G_FMT.
    func format() throws -> V4L2Format
    /// VIDIOC_S_PARM: asks for a frame interval and returns the one the driver
    /// chose; nil when the driver does not let the interval be set.
    func setFrameInterval(_ interval: V4L2Fraction) throws -> V4L2Fraction?
    /// VIDIOC_G_PARM: the current frame interval; nil when the driver does not say.
    func frameInterval() throws -> V4L2Fraction?

    /// VIDIOC_REQBUFS for mmap buffers; returns how many the driver allocated (0 frees them).
    func requestBuffers(count: Int) throws -> Int
    /// VIDIOC_QUERYBUF.
    func queryBuffer(index: Int) throws -> V4L2BufferInfo
    /// mmap of a queried buffer, readable and writable.
    func mapBuffer(_ info: V4L2BufferInfo) throws -> UnsafeMutableRawBufferPointer
    /// munmap of a mapped buffer. Safe when the device is gone.
    func unmapBuffer(_ memory: UnsafeMutableRawBufferPointer)

    /// VIDIOC_QBUF: hands a buffer to the driver to fill.
    func queueBuffer(index: Int) throws
    /// VIDIOC_DQBUF (non-blocking): a filled buffer, or nil when none is ready yet.
    func dequeueBuffer() throws -> V4L2DequeuedBuffer?
    /// VIDIOC_STREAMON.
    func startStreaming() throws
    /// VIDIOC_STREAMOFF (also takes every buffer back from the driver).
    func stopStreaming() throws

    /// poll: waits until a buffer can be dequeued or the device reports an
    /// error (the next dequeue then says which). False when the time ran out.
    func waitForFrame(timeoutMilliseconds: Int) throws -> Bool
}
