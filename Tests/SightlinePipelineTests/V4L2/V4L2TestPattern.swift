import Foundation
@testable import SightlineVision
@testable import SightlinePipeline
import SightlineTesting

/// Test pictures with known colours, and the encodings a camera would send.
enum V4L2TestPattern {
    typealias BGR = (b: UInt8, g: UInt8, r: UInt8)
    static let red: BGR = (0, 0, 255)
    static let green: BGR = (0, 255, 0)
    static let blue: BGR = (255, 0, 0)
    static let white: BGR = (255, 255, 255)

    /// The grey level of the centre patch of frame `number`, so a test can tell frames apart.
    static func marker(frame number: Int) -> UInt8 { UInt8(40 + (number * 23) % 180) }

    /// Quadrants red (top left), green (top right), blue (bottom left),
    /// white (bottom right), and a centre patch grey with the frame marker.
    static func frame(number: Int, width: Int, height: Int) -> ImageBuffer {
        let image = ImageBuffer(width: width, height: height, channels: 3)
        let grey = marker(frame: number)
        for y in 0..<height {
            for x in 0..<width {
                let colour: BGR = inCentre(x, y, width, height) ? (grey, grey, grey) : quadrantColour(x, y, width, height)
                let p = image.bytes + y * image.stride + x * 3
                (p[0], p[1], p[2]) = (colour.b, colour.g, colour.r)
            }
        }
        return image
    }

    /// Where to sample each quadrant's colour (the middle of the quadrant).
    static func quadrantSamples(width: Int, height: Int) -> [(x: Int, y: Int, colour: BGR)] {
        [(width / 8, height / 8, red), (width * 7 / 8, height / 8, green),
         (width / 8, height * 7 / 8, blue), (width * 7 / 8, height * 7 / 8, white)]
    }

    private static func inCentre(_ x: Int, _ y: Int, _ width: Int, _ height: Int) -> Bool {
        abs(x - width / 2) < width / 8 && abs(y - height / 2) < height / 8
    }

    private static func quadrantColour(_ x: Int, _ y: Int, _ width: Int, _ height: Int) -> BGR {
        switch (x < width / 2, y < height / 2) {
        case (true, true): return red
        case (false, true): return green
        case (true, false): return blue
        case (false, false): return white
        }
    }

    // MARK: Encodings

    /// BGR to packed YUYV (BT.601, video range, as UVC cameras send), rows `stride` bytes apart.
    static func yuyv(_ image: ImageBuffer, stride: Int, into out: UnsafeMutableRawPointer) {
        let bytes = out.assumingMemoryBound(to: UInt8.self)
        for y in 0..<image.height {
            for x in Swift.stride(from: 0, to: image.width - 1, by: 2) {
                let (y0, u0, v0) = yuv(image.pixel(x: x, y: y))
                let (y1, u1, v1) = yuv(image.pixel(x: x + 1, y: y))
                let p = bytes + y * stride + x * 2
                p[0] = clamp(y0)
                p[1] = clamp((u0 + u1) / 2)
                p[2] = clamp(y1)
                p[3] = clamp((v0 + v1) / 2)
            }
        }
    }

    /// BGR rows copied `stride` bytes apart (what libv4l2's BGR3 emulation gives).
    static func bgr24(_ image: ImageBuffer, stride: Int, into out: UnsafeMutableRawPointer) {
        for y in 0..<image.height {
            (out + y * stride).copyMemory(from: image.bytes + y * image.stride, byteCount: image.width * 3)
        }
    }

    private static func yuv(_ pixel: (UInt8, UInt8, UInt8)) -> (Double, Double, Double) {
        let (b, g, r) = (Double(pixel.0), Double(pixel.1), Double(pixel.2))
        return (16 + 0.257 * r + 0.504 * g + 0.098 * b,
                128 - 0.148 * r - 0.291 * g + 0.439 * b,
                128 + 0.439 * r - 0.368 * g - 0.071 * b)
    }

    private static func clamp(_ value: Double) -> UInt8 { UInt8(min(255, max(0, value.rounded()))) }
}

extension SourceError {
    /// The case without its message, for assertions.
    var kind: String {
        switch self {
        case .cannotOpen: return "cannotOpen"
        case .vanished: return "vanished"
        case .endOfStream: return "endOfStream"
        case .timeout: return "timeout"
        case .unsupported: return "unsupported"
        }
    }
}

/// True when every channel of the pixel is within `tolerance` of `expected`.
func pixel(_ image: ImageBuffer, x: Int, y: Int, isNear expected: V4L2TestPattern.BGR, tolerance: Int) -> Bool {
    let (b, g, r) = image.pixel(x: x, y: y)
    return abs(Int(b) - Int(expected.b)) <= tolerance && abs(Int(g) - Int(expected.g)) <= tolerance
        && abs(Int(r) - Int(expected.r)) <= tolerance
}
