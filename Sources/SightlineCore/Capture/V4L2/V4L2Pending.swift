// Temporary until the V4L2 capture lands: the source refuses to open with
// a clear reason and discovery finds no camera, so `auto` falls back to demo.
import Foundation

public enum V4L2Discovery {
    public static func captureDevices() -> [(path: String, card: String)] { [] }
}

public final class V4L2Source: FrameSource {
    public let path: String
    public var name: String { path }
    public var pacing: SourcePacing { .device }
    public init(path: String, width: Int, height: Int, fps: Double) { self.path = path }
    public func open() throws -> SourceFormat { throw SourceError.unsupported("V4L2 capture is not built yet") }
    public func nextImage() throws -> CapturedImage { throw SourceError.unsupported("V4L2 capture is not built yet") }
    public func close() {}
}
