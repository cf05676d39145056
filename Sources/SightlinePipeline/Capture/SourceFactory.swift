import Foundation
import SightlineVision

/// Turns a source spec into a source, with the settings it needs.
public struct SourceFactory: Sendable {
    public var cameraWidth = 640
    public var cameraHeight = 480
    public var cameraFPS = 30.0
    /// The demo scene's template and its label.
    public var demoTemplatePath = "config/demo-template.png"
    /// The demo scene's face photo (nil or missing: a demo without a face).
    public var demoFacePath: String? = "config/demo-face.jpg"
    public static let demoLabel = "demo"
    /// Frame rate for still images shown as a stream.
    public var stillFPS = 15.0
    /// Files and streams hand their own H.264 or MJPEG on (`video.passThrough`).
    public var passOn = true

    public init() {}

    /// The source, and the spec it resolved to (auto becomes a camera or demo).
    public func make(_ spec: SourceSpec) throws -> (FrameSource, SourceSpec) {
        switch spec {
        case .auto:
            if let camera = V4L2Discovery.captureDevices().first {
                return try make(.v4l2(path: camera.path))
            }
            return try make(.demo(DemoSource.Options()))
        case .demo(let options):
            let template = try demoTemplate()
            let face = options.showFace ? demoFacePath.flatMap { try? ImageIO.read(path: $0) } : nil
            return (DemoSource(options: options, template: template, templateLabel: Self.demoLabel, face: face), spec)
        case .v4l2(let path):
            return (V4L2Source(path: path, request: .init(width: cameraWidth, height: cameraHeight, fps: cameraFPS),
                               passOn: passOn), spec)
        case .file(let path, let pace, let fps):
            let ext = (path as NSString).pathExtension.lowercased()
            if StillImageSource.imageExtensions.contains(ext) {
                return (StillImageSource(path: path, fps: fps ?? stillFPS, pace: pace), spec)
            }
            return (VideoCaptureSource(uri: path, kind: .file(pace: pace), fpsOverride: fps, passOn: passOn), spec)
        case .stream(let url):
            return (VideoCaptureSource(uri: url, kind: .stream, passOn: passOn), spec)
        }
    }

    public func demoTemplate() throws -> ImageBuffer {
        do {
            return try ImageIO.read(path: demoTemplatePath)
        } catch {
            throw SourceError.cannotOpen("demo template \(demoTemplatePath): \(error)")
        }
    }
}
