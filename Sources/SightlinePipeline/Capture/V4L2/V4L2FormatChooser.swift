import Foundation
import SightlineSupport
import SightlineVision

/// Picks the capture mode (pixel format, size) to ask a device for.
///
/// Order of preference: the size nearest the request (exact when offered),
/// then a mode that reaches the requested frame rate, then the cheapest
/// pixel format to turn into BGR (YUYV, then MJPEG/JPEG, then BGR24, which
/// libv4l2 can make in software from formats this source does not read).
/// So a 1080p request on a camera whose YUYV tops out at 5 fps there but
/// whose MJPEG reaches 30 gets MJPEG; at 640x480 the same camera gets YUYV.
public enum V4L2FormatChooser {
    /// Pixel formats this source turns into BGR, cheapest first.
    public static let supportedFormats: [V4L2FourCC] = [.yuyv, .mjpeg, .jpeg, .bgr24]

    /// A mode the device offers.
    public struct Mode: Sendable, Equatable, CustomStringConvertible {
        public var fourCC: V4L2FourCC
        public var size: V4L2Size
        /// The fastest frame rate at this size; nil when the device does not say.
        public var maxFPS: Double?

        public init(fourCC: V4L2FourCC, size: V4L2Size, maxFPS: Double? = nil) {
            self.fourCC = fourCC
            self.size = size
            self.maxFPS = maxFPS
        }

        public var description: String { "\(fourCC) \(size)" + (maxFPS.map { " up to \($0) fps" } ?? "") }
    }

    /// The best of `modes` for the wanted size and rate; nil when none has a supported format.
    public static func choose(from modes: [Mode], size wanted: V4L2Size, fps: Double) -> Mode? {
        modes.filter { supportedFormats.contains($0.fourCC) }
            .min { score($0, wanted, fps) < score($1, wanted, fps) }
    }

    private struct Score: Comparable {
        var sizeDistance: Double
        var fpsShortfall: Double
        var formatRank: Int

        static func < (a: Score, b: Score) -> Bool {
            (a.sizeDistance, a.fpsShortfall, a.formatRank) < (b.sizeDistance, b.fpsShortfall, b.formatRank)
        }
    }

    private static func score(_ mode: Mode, _ wanted: V4L2Size, _ fps: Double) -> Score {
        Score(sizeDistance: sizeDistance(mode.size, wanted),
              fpsShortfall: mode.maxFPS.map { max(0, (fps - $0).rounded(toPlaces: 3)) } ?? 0,
              formatRank: supportedFormats.firstIndex(of: mode.fourCC) ?? supportedFormats.count)
    }

    /// How far apart two sizes are, by ratio: 2x too wide counts as much as 2x too narrow.
    private static func sizeDistance(_ size: V4L2Size, _ wanted: V4L2Size) -> Double {
        guard size.width > 0, size.height > 0, wanted.width > 0, wanted.height > 0 else { return .infinity }
        let distance = abs(log(Double(size.width) / Double(wanted.width)))
            + abs(log(Double(size.height) / Double(wanted.height)))
        return distance.rounded(toPlaces: 6)
    }
}

