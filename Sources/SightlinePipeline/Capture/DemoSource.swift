import CSightlineOpenCV
import Foundation
import SightlineVision
import SightlineSupport

/// A synthetic scene made in code, deterministic from a seed: a textured
/// background scrolling slowly, a face photo (config/demo-face.jpg) that
/// glides, grows, turns in the image plane through ±35° and hides for 2.5 s
/// of every 14, the template gliding along a Lissajous path over it while it
/// grows and shrinks, and sensor-like noise. It knows where it put the
/// template and the face (box and roll), and says so as ground truth with
/// every frame; a face more than a quarter covered by the template is not
/// in the ground truth.
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
        /// Draw the face photo, when the source has one (`demo?face=0` leaves it out).
        public var showFace = true
        public init() {}
    }

    /// The ground-truth label of the demo's face.
    public static let faceLabel = "face"
    /// Where the face is in config/demo-face.jpg, normalized (measured with YuNet
    /// and checked by eye; the photo is turned so the face is upright, roll 0).
    static let faceInPhoto = NormalizedBox(x: 0.30, y: 0.226, w: 0.40, h: 0.516)
    /// The face's roll swings through ±faceRollAmplitude degrees.
    public static let faceRollAmplitude = 35.0
    /// Seconds of each cycle, and the part of it in which the face is hidden.
    static let faceCycle = 14.0
    static let faceHidden = 10.5..<13.0

    public let options: Options
    public let templateLabel: String
    public var name: String { "demo \(options.width)x\(options.height)" }
    public var pacing: SourcePacing { .fixedRate }

    private let template: ImageBuffer
    private let face: ImageBuffer?
    private var background: ImageBuffer?
    /// Sensor-like noise made once at open: `noiseFrames` frames, each split
    /// into what it adds and what it takes away (drawing fresh Gaussian noise
    /// every frame cost about 10 ms, a third of a core at 30 fps).
    private var noise: [(plus: ImageBuffer, minus: ImageBuffer)] = []
    static let noiseFrames = 8
    private var index: UInt64 = 0

    public init(options: Options, template: ImageBuffer, templateLabel: String, face: ImageBuffer? = nil) {
        self.options = options
        self.template = template
        self.templateLabel = templateLabel
        self.face = options.showFace ? face : nil
    }

    /// Where the face photo is drawn in frame `index`: its centre, scale and
    /// roll; nil while it is hidden or the source has no face.
    public func facePlacement(at index: UInt64) -> (x: Double, y: Double, scale: Double, roll: Double)? {
        guard let face else { return nil }
        let t = Double(index) / options.fps
        let phase = Double(options.seed % 1000) * 0.23
        guard !Self.faceHidden.contains(t.truncatingRemainder(dividingBy: Self.faceCycle)) else { return nil }
        let scale = 0.8 + 0.5 * (0.5 + 0.5 * sin(t * 0.5 + phase))
        let half = Double(max(face.width, face.height)) * scale / 2
        let x = half + (Double(options.width) - 2 * half) * (0.5 + 0.5 * sin(t * 0.37 + 1 + phase))
        let y = half + (Double(options.height) - 2 * half) * (0.5 + 0.5 * cos(t * 0.29 + phase))
        return (x, y, scale, Self.faceRollAmplitude * sin(t * 0.6 + phase))
    }

    /// The face's box and roll in frame `index` when it is in view and not
    /// more than a quarter covered by the template.
    public func faceBox(at index: UInt64) -> GroundTruthBox? {
        guard let face, let place = facePlacement(at: index) else { return nil }
        let inPhoto = Self.faceInPhoto
        let w = inPhoto.w * Double(face.width) * place.scale, h = inPhoto.h * Double(face.height) * place.scale
        // The face's centre, offset from the photo's centre, turned with it.
        let dx = (inPhoto.x + inPhoto.w / 2 - 0.5) * Double(face.width) * place.scale
        let dy = (inPhoto.y + inPhoto.h / 2 - 0.5) * Double(face.height) * place.scale
        let radians = place.roll * .pi / 180
        let cx = place.x + dx * cos(radians) - dy * sin(radians)
        let cy = place.y + dx * sin(radians) + dy * cos(radians)
        let box = GroundTruthBox(label: Self.faceLabel, x: cx - w / 2, y: cy - h / 2, w: w, h: h, roll: place.roll)
        let cover = templateBox(at: index)
        let overlapW = max(0, min(box.x + box.w, cover.x + cover.w) - max(box.x, cover.x))
        let overlapH = max(0, min(box.y + box.h, cover.y + cover.h) - max(box.y, cover.y))
        return overlapW * overlapH > 0.25 * w * h ? nil : box
    }

    public func open() throws -> SourceFormat {
        if background == nil { background = try makeBackground() }
        if noise.isEmpty && options.noiseSigma > 0 { noise = try makeNoise() }
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
        if let face, let place = facePlacement(at: index) {
            try drawFace(face, place, into: frame)
        }
        let box = templateBox(at: index)
        try ImageOps.resize(template.cView, into: frame.cView(x: Int(box.x), y: Int(box.y), width: Int(box.w), height: Int(box.h)),
                            interpolation: .linear)
        if !noise.isEmpty {
            let layer = noise[Int(index % UInt64(noise.count))]
            try ImageOps.addSigned(frame, plus: layer.plus, minus: layer.minus)
        }
        let truth = [box] + (faceBox(at: index).map { [$0] } ?? [])
        index += 1
        return CapturedImage(image: frame, groundTruth: truth)
    }

    /// Draws the face photo turned and scaled into the square around its
    /// place only (a warp over the whole frame would cost a few ms a frame).
    private func drawFace(_ face: ImageBuffer, _ place: (x: Double, y: Double, scale: Double, roll: Double),
                          into frame: ImageBuffer) throws {
        let half = Double(max(face.width, face.height)) * place.scale * 0.72   // covers the turned corners
        let x0 = max(0, Int(place.x - half)), y0 = max(0, Int(place.y - half))
        let x1 = min(frame.width, Int((place.x + half).rounded(.up))), y1 = min(frame.height, Int((place.y + half).rounded(.up)))
        guard x1 > x0, y1 > y0 else { return }
        let region = frame.cView(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
        try OpenCVError.check {
            slcv_paste_warped(face.cView, region, place.x - Double(x0), place.y - Double(y0), place.scale, -place.roll, $0)
        }
    }

    /// Gaussian noise frames (sigma `noiseSigma`, from the seed) around mid-gray, split in two.
    private func makeNoise() throws -> [(plus: ImageBuffer, minus: ImageBuffer)] {
        try (0..<Self.noiseFrames).map { layer in
            let sample = ImageBuffer(width: options.width, height: options.height)
            sample.bytes.update(repeating: 128, count: sample.byteCount)
            try ImageOps.addNoise(sample, seed: options.seed &* 1_000_003 &+ UInt64(layer), sigma: options.noiseSigma)
            let plus = ImageBuffer(width: options.width, height: options.height)
            let minus = ImageBuffer(width: options.width, height: options.height)
            for i in 0..<sample.byteCount {
                let value = Int(sample.bytes[i]) - 128
                plus.bytes[i] = UInt8(max(0, value))
                minus.bytes[i] = UInt8(max(0, -value))
            }
            return (plus, minus)
        }
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
