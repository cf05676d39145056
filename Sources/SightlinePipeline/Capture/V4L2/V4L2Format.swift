/// A single-planar capture format: what S_FMT asks for and G_FMT/S_FMT answer.
public struct V4L2Format: Sendable, Equatable, CustomStringConvertible {
    public var fourCC: V4L2FourCC
    public var width: Int
    public var height: Int
    /// Bytes from one row to the next (0 in a request: the driver decides; 0 for compressed formats).
    public var bytesPerLine: Int
    /// The largest a frame can be, in bytes.
    public var sizeImage: Int

    public init(fourCC: V4L2FourCC, width: Int, height: Int, bytesPerLine: Int = 0, sizeImage: Int = 0) {
        self.fourCC = fourCC
        self.width = width
        self.height = height
        self.bytesPerLine = bytesPerLine
        self.sizeImage = sizeImage
    }

    public var size: V4L2Size { V4L2Size(width: width, height: height) }

    public var description: String { "\(fourCC) \(width)x\(height)" }
}
