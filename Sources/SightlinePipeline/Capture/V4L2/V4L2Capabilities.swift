import CSightlineV4L2

/// What VIDIOC_QUERYCAP says about a device node.
public struct V4L2Capabilities: Sendable, Equatable {
    public var driver: String
    public var card: String
    public var busInfo: String
    /// The capabilities of this node (device_caps when the driver reports them).
    public var deviceCaps: UInt32

    public init(driver: String, card: String, busInfo: String, deviceCaps: UInt32) {
        self.driver = driver
        self.card = card
        self.busInfo = busInfo
        self.deviceCaps = deviceCaps
    }

    /// Single-planar video capture (what webcams offer; metadata nodes do not).
    public var canCapture: Bool { deviceCaps & UInt32(V4L2_CAP_VIDEO_CAPTURE) != 0 }
    /// Supports the streaming (mmap) I/O this source uses.
    public var canStream: Bool { deviceCaps & UInt32(V4L2_CAP_STREAMING) != 0 }
}
