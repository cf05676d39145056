import CSightlineOpenCV
import Foundation

/// Multi-scale template matching as the tutorial did it: the frame shrunk
/// by 0.35, each template tried at scales 1, 1.25^k and 0.75^k (k = 1...4)
/// with TM_CCOEFF_NORMED, accepted at its threshold (0.7 by default). One
/// change from the tutorial: the best-scoring scale wins rather than the
/// first over the threshold.
///
/// Threads: a matcher belongs to one thread (the pipeline's); it keeps
/// scaled templates and a score buffer between frames.
public final class TemplateMatcher {
    public struct Options: Sendable, Equatable {
        public static let defaultThreshold = 0.7
        public var frameScale = 0.35
        public var scales: [Double] = [1] + (1...4).map { pow(1.25, Double($0)) } + (1...4).map { pow(0.75, Double($0)) }
        /// Scaled templates smaller than this (pixels, either side, at the
        /// shrunk frame's scale) are skipped: under 12 px they match soft
        /// background blobs at scores over 0.7.
        public var minimumSide = 12
        public init() {}
    }

    /// A template prepared for one frame scale: its gray image at each scale.
    private struct Prepared {
        let template: Template
        let levels: [(scale: Double, image: ImageBuffer)]
    }

    public let options: Options
    private var prepared: [ObjectIdentifier: Prepared] = [:]
    private var scores: UnsafeMutablePointer<Float>
    private var scoreCapacity = 0

    public init(options: Options = Options()) {
        self.options = options
        scores = .allocate(capacity: 1)
    }

    deinit { scores.deallocate() }

    /// The frame shrunk for matching (gray), which a convert stage makes once per frame.
    public func shrink(gray frame: ImageBuffer) throws -> ImageBuffer {
        let width = max(1, Int((Double(frame.width) * options.frameScale).rounded()))
        let height = max(1, Int((Double(frame.height) * options.frameScale).rounded()))
        return try ImageOps.resized(frame, width: width, height: height, interpolation: .area)
    }

    /// Finds each template in the shrunk gray frame; boxes are normalized to the full frame.
    public func match(templates: [Template], in small: ImageBuffer) throws -> [Detection] {
        var live = Set<ObjectIdentifier>()
        var detections: [Detection] = []
        for template in templates {
            let key = ObjectIdentifier(template)
            live.insert(key)
            let entry = try prepared[key] ?? prepare(template)
            prepared[key] = entry
            if let hit = try best(entry, in: small), hit.score >= template.threshold {
                detections.append(hit)
            }
        }
        prepared = prepared.filter { live.contains($0.key) }
        return detections
    }

    private func prepare(_ template: Template) throws -> Prepared {
        var levels: [(Double, ImageBuffer)] = []
        for scale in options.scales {
            let w = Int((Double(template.gray.width) * options.frameScale * scale).rounded())
            let h = Int((Double(template.gray.height) * options.frameScale * scale).rounded())
            guard w >= options.minimumSide, h >= options.minimumSide else { continue }
            levels.append((scale, try ImageOps.resized(template.gray, width: w, height: h, interpolation: .area)))
        }
        return Prepared(template: template, levels: levels)
    }

    private func best(_ entry: Prepared, in small: ImageBuffer) throws -> Detection? {
        var top: (score: Float, x: Int, y: Int, scale: Double, w: Int, h: Int)?
        for (scale, image) in entry.levels where image.width <= small.width && image.height <= small.height {
            let (score, x, y) = try bestLocation(of: image, in: small)
            if score > (top?.score ?? -2) { top = (score, x, y, scale, image.width, image.height) }
        }
        guard let top else { return nil }
        let fs = Double(small.width), hs = Double(small.height)
        let box = NormalizedBox(x: Double(top.x) / fs, y: Double(top.y) / hs, w: Double(top.w) / fs, h: Double(top.h) / hs)
        return .template(label: entry.template.name, score: Double(top.score), scale: top.scale, angle: 0, box: box)
    }

    /// The peak of TM_CCOEFF_NORMED of `templ` over `image`.
    func bestLocation(of templ: ImageBuffer, in image: ImageBuffer) throws -> (Float, Int, Int) {
        let rw = image.width - templ.width + 1, rh = image.height - templ.height + 1
        if rw * rh > scoreCapacity {
            scores.deallocate()
            scores = .allocate(capacity: rw * rh)
            scoreCapacity = rw * rh
        }
        try OpenCVError.check { slcv_match_template(image.cView, templ.cView, scores, Int32(rw), $0) }
        var best: Float = -2, bestIndex = 0
        for i in 0..<(rw * rh) where scores[i] > best && scores[i].isFinite {
            best = scores[i]
            bestIndex = i
        }
        return (best, bestIndex % rw, bestIndex / rw)
    }
}
