/// Where a driver buffer lives, from VIDIOC_QUERYBUF (what mmap needs).
public struct V4L2BufferInfo: Sendable, Equatable {
    public var index: Int
    public var offset: Int
    public var length: Int

    public init(index: Int, offset: Int, length: Int) {
        self.index = index
        self.offset = offset
        self.length = length
    }
}

/// A filled buffer handed back by VIDIOC_DQBUF. It belongs to the caller
/// until it is queued again.
public struct V4L2DequeuedBuffer: Sendable, Equatable {
    public var index: Int
    /// How many bytes of the buffer hold the frame.
    public var bytesUsed: Int
    /// The driver's frame counter (gaps mean the driver dropped frames).
    public var sequence: UInt32
    /// V4L2_BUF_FLAG_ERROR: the frame may be corrupt.
    public var hasError: Bool

    public init(index: Int, bytesUsed: Int, sequence: UInt32 = 0, hasError: Bool = false) {
        self.index = index
        self.bytesUsed = bytesUsed
        self.sequence = sequence
        self.hasError = hasError
    }
}
