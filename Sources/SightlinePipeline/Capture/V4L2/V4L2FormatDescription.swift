import CSightlineV4L2

/// One entry of VIDIOC_ENUM_FMT.
public struct V4L2FormatDescription: Sendable, Equatable {
    public var fourCC: V4L2FourCC
    public var description: String
    public var flags: UInt32

    public init(fourCC: V4L2FourCC, description: String = "", flags: UInt32 = 0) {
        self.fourCC = fourCC
        self.description = description.isEmpty ? fourCC.description : description
        self.flags = flags
    }

    /// Made by libv4lconvert in software rather than by the camera.
    public var isEmulated: Bool { flags & UInt32(V4L2_FMT_FLAG_EMULATED) != 0 }
}
