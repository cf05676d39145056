import Foundation
import SightlineVision

/// What a source says about the frames it will give, once opened.
public struct SourceFormat: Sendable, Equatable, CustomStringConvertible {
    public var width: Int
    public var height: Int
    public var fps: Double
    /// How the pixels arrived (for example "YUYV", "MJPG", "ffmpeg", "synthetic").
    public var pixelFormat: String
    /// The encoding its frames carry to pass on (`SourceUnit`), nil when
    /// they carry none and whatever is sent is encoded here.
    public var passedOn: SourceUnit.Codec?

    public init(width: Int, height: Int, fps: Double, pixelFormat: String, passedOn: SourceUnit.Codec? = nil) {
        self.width = width
        self.height = height
        self.fps = fps
        self.pixelFormat = pixelFormat
        self.passedOn = passedOn
    }

    public var description: String {
        "\(width)x\(height) @ \(fps) fps (\(pixelFormat)\(passedOn.map { ", \($0.rawValue) passed on" } ?? ""))"
    }
}

/// A box the source knows to be true (the demo's template), in pixels.
public struct GroundTruthBox: Sendable, Equatable, Codable {
    public var label: String
    public var x: Double, y: Double, w: Double, h: Double
    /// A face's roll in degrees, clockwise positive (nil for templates).
    public var roll: Double?
    public init(label: String, x: Double, y: Double, w: Double, h: Double, roll: Double? = nil) {
        self.label = label; self.x = x; self.y = y; self.w = w; self.h = h; self.roll = roll
    }
}

/// One image as a source produced it, before the capture loop numbers it.
public struct CapturedImage: Sendable {
    /// The picture; its BGR pixels may be made only when asked for (`FramePicture`).
    public var picture: FramePicture
    public var image: ImageBuffer { picture.image }
    public var groundTruth: [GroundTruthBox]
    /// The picture as the source encoded it, when it can be passed on (see `SourceUnit`).
    public var sourceUnit: SourceUnit?
    public init(image: ImageBuffer, groundTruth: [GroundTruthBox] = [], sourceUnit: SourceUnit? = nil) {
        self.init(picture: FramePicture(image), groundTruth: groundTruth, sourceUnit: sourceUnit)
    }
    public init(picture: FramePicture, groundTruth: [GroundTruthBox] = [], sourceUnit: SourceUnit? = nil) {
        self.picture = picture
        self.groundTruth = groundTruth
        self.sourceUnit = sourceUnit
    }
}

/// How a source wants to be paced by the capture loop.
public enum SourcePacing: Sendable, Equatable {
    /// `nextImage()` blocks until the device has a frame (cameras, streams).
    case device
    /// The capture loop sleeps to the source's fps between frames (files, demo).
    case fixedRate
    /// As fast as the pipeline takes frames (`file:...?pace=max`).
    case pipeline
}

public enum SourceError: Error, CustomStringConvertible, Sendable, Equatable {
    case cannotOpen(String)
    case vanished(String)
    case endOfStream
    case timeout(String)
    case unsupported(String)

    public var description: String {
        switch self {
        case .cannotOpen(let why): return "cannot open: \(why)"
        case .vanished(let why): return "source vanished: \(why)"
        case .endOfStream: return "end of stream"
        case .timeout(let why): return "timed out: \(why)"
        case .unsupported(let why): return "unsupported: \(why)"
        }
    }
}

/// A producer of BGR frames. All methods are called on the capture thread
/// that owns the source (see CaptureLoop); a source needs no lock of its own.
public protocol FrameSource: AnyObject {
    /// A short human name, for logs and /api/state.
    var name: String { get }
    var pacing: SourcePacing { get }
    /// Opens (or reopens after a failure) and reports what it will deliver.
    func open() throws -> SourceFormat
    /// The next image. Throws SourceError when the source fails or vanishes.
    func nextImage() throws -> CapturedImage
    /// Releases the device or file; open() may be called again afterwards.
    func close()
}
