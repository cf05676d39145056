import Foundation
import SightlineVision

/// A still image file shown as a stream: the same picture every frame, at a
/// fixed rate (or as fast as the pipeline takes it with pace=max).
///
/// Threads: used only on the capture thread that owns it.
public final class StillImageSource: FrameSource {
    public let path: String
    public let fps: Double
    public let pace: FilePace
    /// The file's base name: what viewers see (the path is for admins, in the spec).
    public var name: String { (path as NSString).lastPathComponent }
    public var pacing: SourcePacing { pace == .max ? .pipeline : .fixedRate }
    private var image: ImageBuffer?

    public static let imageExtensions: Set<String> = ["jpg", "jpeg", "png", "bmp", "webp", "pgm", "ppm"]

    public init(path: String, fps: Double, pace: FilePace) {
        self.path = path
        self.fps = fps
        self.pace = pace
    }

    public func open() throws -> SourceFormat {
        do {
            let loaded = try ImageIO.read(path: path)
            image = loaded
            return SourceFormat(width: loaded.width, height: loaded.height, fps: fps, pixelFormat: "still")
        } catch {
            throw SourceError.cannotOpen("\(path): \(error)")
        }
    }

    public func close() { image = nil }

    public func nextImage() throws -> CapturedImage {
        guard let image else { throw SourceError.cannotOpen("not open") }
        // Each frame gets its own buffer: downstream stages may hold it.
        return CapturedImage(image: image.copy())
    }
}
