import Foundation

/// A synthetic scene made in code, deterministic from a seed: a textured
/// background scrolling slowly, the template gliding along a Lissajous path
/// while it grows and shrinks, and sensor-like noise. It knows where it put
/// the template, and says so as ground truth with every frame.
///
/// Threads: used only on the capture thread that owns it.
public final class DemoSource: FrameSource {
    public struct Options: Sendable, Equatable {
        public var width = 640
        public var height = 480
        public var fps = 30.0
        public var seed: UInt64 = 7
        /// Template scale range relative to its own size.
        public var minScale = 0.7
        public var maxScale = 1.5
        public var noiseSigma = 4.0
        public init() {}
    }

    public let options: Options
    public let templateLabel: String
    public var name: String { "demo \(options.width)x\(options.height)" }
    public var pacing: SourcePacing { .fixedRate }

    private let template: ImageBuffer
    private var background: ImageBuffer?
    private var index: UInt64 = 0

    public init(options: Options, template: ImageBuffer, templateLabel: String) {
        self.options = options
        self.template = template
        self.templateLabel = templateLabel
    }

    public func open() throws -> SourceFormat {
        if background == nil { background = try makeBackground() }
        return SourceFormat(width: options.width, height: options.height, fps: options.fps, pixelFormat: "synthetic")
    }

    public func close() {}

    /// The template's box in frame `index` (pixels), the scene's ground truth.
    public func templateBox(at index: UInt64) -> GroundTruthBox {
        let t = Double(index) / options.fps
        let phase = Double(options.seed % 1000) * 0.37
        let scale = options.minScale + (options.maxScale - options.minScale) * (0.5 + 0.5 * sin(t * 0.9 + phase))
        let w = (Double(template.width) * scale).rounded()
        let h = (Double(template.height) * scale).rounded()
        let freeX = Double(options.width) - w - 2
        let freeY = Double(options.height) - h - 2
        let x = (1 + freeX * (0.5 + 0.5 * sin(t * 0.53 + phase))).rounded()
        let y = (1 + freeY * (0.5 + 0.5 * sin(t * 0.71 + 2 * phase))).rounded()
        return GroundTruthBox(label: templateLabel, x: x, y: y, w: w, h: h)
    }

    public func nextImage() throws -> CapturedImage {
        guard let background else { throw SourceError.cannotOpen("demo source not opened") }
        let frame = ImageBuffer(width: options.width, height: options.height)
        copyScrolledBackground(background, into: frame, at: index)
        let box = templateBox(at: index)
        try ImageOps.resize(template.cView, into: frame.cView(x: Int(box.x), y: Int(box.y), width: Int(box.w), height: Int(box.h)),
                            interpolation: .linear)
        if options.noiseSigma > 0 {
            try ImageOps.addNoise(frame, seed: options.seed &* 1_000_003 &+ index, sigma: options.noiseSigma)
        }
        index += 1
        return CapturedImage(image: frame, groundTruth: [box])
    }

    /// A background twice the frame's size: soft colour clouds from upscaled
    /// random noise, with a faint grid so motion is visible.
    private func makeBackground() throws -> ImageBuffer {
        var rng = SplitMix64(seed: options.seed)
        let coarse = ImageBuffer(width: 24, height: 18)
        for i in 0..<coarse.byteCount { coarse.bytes[i] = UInt8(60 + rng.next() % 140) }
        let big = try ImageOps.resized(coarse, width: options.width * 2, height: options.height * 2,
                                       interpolation: .linear)
        for y in stride(from: 0, to: big.height, by: 40) {
            for x in 0..<big.width { (big.bytes + y * big.stride + x * 3).update(repeating: 90, count: 3) }
        }
        for y in 0..<big.height {
            for x in stride(from: 0, to: big.width, by: 40) { (big.bytes + y * big.stride + x * 3).update(repeating: 90, count: 3) }
        }
        return big
    }

    private func copyScrolledBackground(_ background: ImageBuffer, into frame: ImageBuffer, at index: UInt64) {
        let t = Double(index) / options.fps
        let offsetX = Int((Double(options.width) / 2) * (0.5 + 0.5 * sin(t * 0.11)))
        let offsetY = Int((Double(options.height) / 2) * (0.5 + 0.5 * cos(t * 0.07)))
        for row in 0..<frame.height {
            (frame.bytes + row * frame.stride).update(
                from: background.bytes + (row + offsetY) * background.stride + offsetX * 3, count: frame.stride)
        }
    }
}

/// A small deterministic generator (SplitMix64), so scenes repeat exactly from a seed.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
