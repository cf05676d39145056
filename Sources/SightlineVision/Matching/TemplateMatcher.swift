import CSightlineOpenCV
import Foundation
import SightlineSupport

/// Multi-scale template matching, starting from the tutorial's method and
/// doing better than it.
///
/// The tutorial: the frame shrunk by 0.35; each template tried at scales 1,
/// 1.25^k and 0.75^k (k = 1...4); TM_CCOEFF_NORMED; accepted at 0.7
/// (`frameScale = 0.35, refineScale = nil` reproduces it). The defaults keep
/// its scales and threshold and add:
/// - coarse to fine: the scales are searched on a smaller level (the frame
///   shrunk by 0.175) and each candidate is refined on a finer one (0.7)
///   over nearby scales (and angles) in a window around the hit; the refined
///   score decides, and the best-scoring scale wins, not the first over the
///   threshold;
/// - while a template is tracked, only a window around its last place and
///   scale is searched; the full search runs when it is lost;
/// - an optional rotation search (`angles`), matching the inscribed,
///   axis-aligned part of the rotated template so no corner is filled in;
/// - several instances per template with non-maximum suppression.
///
/// Threads: a matcher belongs to one thread at a time (its TemplateStage's, lent by
/// ConcurrentStages to one Dispatch worker per frame); it keeps
/// prepared templates, tracks and a score buffer between frames.
public final class TemplateMatcher {
    public struct Options: Sendable, Equatable {
        public static let defaultThreshold = 0.7
        public static let tutorialScales: [Double] =
            [1] + (1...4).map { pow(1.25, Double($0)) } + (1...4).map { pow(0.75, Double($0)) }

        /// The coarse level: the frame shrunk by this.
        public var frameScale = 0.175
        public var scales: [Double] = tutorialScales
        /// Template sizes under this (full-frame pixels, either side) are not
        /// searched: so small, they match soft background blobs over 0.7.
        public var minimumFrameSide = 34.0
        /// Refine coarse hits at this fraction of the full frame (nil: no refinement).
        public var refineScale: Double? = 0.7
        /// Rotations tried, degrees clockwise ([0]: no rotation search).
        public var angles: [Double] = [0]
        /// Search near the last hit first.
        public var tracking = true
        /// Time for full searches in one frame (seconds; nil: no limit). Templates
        /// that are not being tracked take turns: each frame runs at least one
        /// full search, then more while this budget lasts, starting where the
        /// last frame stopped. Sixteen absent templates at 640x480 (about 5 ms
        /// each) thus cost about this per frame instead of 80 ms, and each is
        /// still searched every few frames.
        public var fullSearchBudget: Double? = 0.012
        /// A template that is not tracked gets a full search at most once in
        /// this many seconds of frame time (when `match` is given the frame's
        /// time): one that comes into view is found within it, and an absent
        /// one costs a full search five times a second rather than on every
        /// frame (at 640x480 about 8 ms each: a fifth of a core at 25 fps).
        /// A template that the tracking search just lost is searched at once.
        public var lostSearchInterval = 0.2
        /// Most instances reported per template.
        public var maxInstances = 1
        /// Candidates whose boxes overlap more than this (IoU) are one.
        public var suppressionOverlap = 0.3
        /// A coarse peak is refined when it scores at least this share of the threshold ...
        public var candidateShare = 0.7
        /// ... and is within this much of the best coarse peak (weaker ones rarely win).
        public var candidateMargin = 0.15

        public init() {}

        /// Angles from -range to +range in `step` degrees.
        public static func angles(range: Double, step: Double) -> [Double] {
            guard range > 0, step > 0 else { return [0] }
            let count = Int((range / step).rounded(.down))
            return (-count...count).map { Double($0) * step }
        }
    }

    /// A found instance, in the pixels of the level it was found at.
    struct Hit {
        var score: Double
        var centerX: Double, centerY: Double
        var scaleIndex: Int
        var angle: Double
        var width: Double, height: Double
        /// The level: its size and its scale relative to the full frame.
        var levelWidth: Int, levelHeight: Int
        var levelScale: Double
        /// Tracked frames since the scales beside this hit's were last tried (`trackedHits`).
        var framesSinceScaleCheck = 0

        var box: NormalizedBox {
            let lw = Double(levelWidth), lh = Double(levelHeight)
            let x0 = max(0, (centerX - width / 2) / lw), y0 = max(0, (centerY - height / 2) / lh)
            let x1 = min(1, (centerX + width / 2) / lw), y1 = min(1, (centerY + height / 2) / lh)
            return NormalizedBox(x: x0, y: y0, w: max(0, x1 - x0), h: max(0, y1 - y0))
        }
    }

    /// A template drawn at one level, scale and angle.
    struct Prepared {
        let image: ImageBuffer
        /// Size of the whole (unrotated) template at this level and scale.
        let fullWidth: Double, fullHeight: Double
    }

    struct PreparedKey: Hashable {
        let template: ObjectIdentifier
        let levelScale: Int
        let scaleIndex: Int
        let angleTenths: Int
    }

    struct Track {
        var hit: Hit
        var missed = 0
    }

    /// Scales live on a grid of 2 % steps, so refinement and tracking reuse
    /// prepared templates instead of drawing new ones every frame.
    static let scaleStep = 1.02
    static func scaleIndex(_ scale: Double) -> Int { Int((log(scale) / log(scaleStep)).rounded()) }
    static func scale(_ index: Int) -> Double { pow(scaleStep, Double(index)) }

    public let options: Options
    private var prepared: [PreparedKey: Prepared] = [:]
    private var tracks: [ObjectIdentifier: [Track]] = [:]
    private var scores: UnsafeMutablePointer<Float>
    private var scoreCapacity = 0
    /// Round-robin start for full searches: the template after the last one searched.
    private var nextFullSearch = 0
    /// Frame time of each template's last full search (see `lostSearchInterval`).
    private var lastFullSearch: [ObjectIdentifier: Double] = [:]

    public init(options: Options = Options()) {
        self.options = options
        scores = .allocate(capacity: 1)
    }

    deinit { scores.deallocate() }

    /// The frame shrunk to the coarse level.
    public func shrink(gray frame: ImageBuffer) throws -> ImageBuffer {
        try Self.level(of: frame, scale: options.frameScale)
    }

    static func level(of frame: ImageBuffer, scale: Double) throws -> ImageBuffer {
        if scale >= 0.999 { return frame }
        let width = max(1, Int((Double(frame.width) * scale).rounded()))
        let height = max(1, Int((Double(frame.height) * scale).rounded()))
        return try ImageOps.scaledDown(frame, width: width, height: height)
    }

    /// Finds the templates in a gray frame; boxes are normalized to the frame.
    /// With the frame's time (`at`, seconds), templates that are not tracked
    /// are searched at most once a `lostSearchInterval`; without, on every call.
    public func match(templates: [Template], gray: ImageBuffer, at time: Double? = nil) throws -> [Detection] {
        let live = Set(templates.map { ObjectIdentifier($0) })
        prune(keeping: live)
        var coarse: ImageBuffer?
        // The finer level only when something uses it (a track, a full search).
        var fineLevel: ImageBuffer??
        func fine() throws -> ImageBuffer? {
            if let made = fineLevel { return made }
            let made = try options.refineScale.map { try Self.level(of: gray, scale: $0) }
            fineLevel = .some(made)
            return made
        }
        var found: [Int: [Hit]] = [:]
        var lost: [Int] = []
        for (index, template) in templates.enumerated() {
            let key = ObjectIdentifier(template)
            let wasTracked = tracks[key]?.isEmpty == false
            let hits = wasTracked ? try trackedHits(template, fine: try fine()) : []
            if !hits.isEmpty {
                found[index] = hits
                continue
            }
            // Just lost by tracking: search now. Otherwise when its interval is up.
            if wasTracked { lastFullSearch[key] = nil }
            if let time, let last = lastFullSearch[key], time >= last, time - last < options.lostSearchInterval {
                continue
            }
            lost.append(index)
        }
        // Lost templates take turns at the full search, from where the last frame stopped.
        let start = MonotonicClock.nanos()
        let turn = lost.firstIndex { $0 >= nextFullSearch } ?? 0
        for (done, index) in (lost[turn...] + lost[..<turn]).enumerated() {
            if done > 0, let budget = options.fullSearchBudget,
               Double(MonotonicClock.nanos() - start) / 1e9 >= budget {
                nextFullSearch = index
                break
            }
            if coarse == nil { coarse = try shrink(gray: gray) }
            found[index] = try fullSearch(templates[index], coarse: coarse!, fine: try fine())
            if let time { lastFullSearch[ObjectIdentifier(templates[index])] = time }
            nextFullSearch = index + 1
        }
        var detections: [Detection] = []
        for (index, template) in templates.enumerated() {
            // A lost template whose turn has not come keeps no track, as before its search.
            let hits = found[index] ?? []
            updateTracks(ObjectIdentifier(template), hits)
            detections += hits.map {
                .template(label: template.name, score: $0.score, scale: Self.scale($0.scaleIndex), angle: $0.angle, box: $0.box)
            }
        }
        return detections
    }

    // MARK: - Searches

    private func trackedHits(_ template: Template, fine: ImageBuffer?) throws -> [Hit] {
        guard options.tracking, let fine, let known = tracks[ObjectIdentifier(template)], !known.isEmpty else { return [] }
        var hits: [Hit] = []
        for track in known {
            let margin = 0.25 * max(track.hit.width, track.hit.height) + 4
            // A hit that kept its scale is looked for at that scale alone,
            // and the scales beside it tried only every `scaleCheckFrames`
            // frames or when its score falls (a zoom): one match a frame
            // instead of three for a template that moves without zooming.
            let held = track.hit.framesSinceScaleCheck + 1 < Self.scaleCheckFrames
                ? try refine(template, around: track.hit, in: fine, margin: margin, scaleOffsets: [0], angleOffsets: [0])
                : nil
            if var hit = held, hit.score >= template.threshold, hit.score >= track.hit.score - Self.heldScaleScoreDrop {
                hit.framesSinceScaleCheck = track.hit.framesSinceScaleCheck + 1
                hits.append(hit)
                continue
            }
            // The scales beside it (its own too, unless just matched above); the best wins.
            let beside = try refine(template, around: track.hit, in: fine, margin: margin,
                                    scaleOffsets: held == nil ? [-2, 0, 2] : [-2, 2], angleOffsets: [0])
            if let hit = [held, beside].compactMap({ $0 }).max(by: { $0.score < $1.score }),
               hit.score >= template.threshold {
                hits.append(hit)
            }
        }
        // Every track must be found again; otherwise the full search decides.
        return hits.count == known.count ? suppress(hits) : []
    }

    /// A tracked hit's neighbouring scales are tried at least every this many frames...
    static let scaleCheckFrames = 5
    /// ...and whenever its score at its own scale falls by more than this.
    static let heldScaleScoreDrop = 0.02

    private func fullSearch(_ template: Template, coarse: ImageBuffer, fine: ImageBuffer?) throws -> [Hit] {
        var candidates: [Hit] = []
        let floor = template.threshold * (fine == nil ? 1 : options.candidateShare)
        for scale in options.scales {
            for angle in options.angles {
                let index = Self.scaleIndex(scale)
                guard let drawn = try draw(template, levelScale: options.frameScale, scaleIndex: index, angle: angle),
                      drawn.image.width <= coarse.width, drawn.image.height <= coarse.height else { continue }
                for peak in try peaks(of: drawn.image, in: coarse, count: options.maxInstances) where Double(peak.score) >= floor {
                    candidates.append(Hit(score: Double(peak.score),
                                          centerX: Double(peak.x) + Double(drawn.image.width) / 2,
                                          centerY: Double(peak.y) + Double(drawn.image.height) / 2,
                                          scaleIndex: index, angle: angle,
                                          width: drawn.fullWidth, height: drawn.fullHeight,
                                          levelWidth: coarse.width, levelHeight: coarse.height,
                                          levelScale: options.frameScale))
                }
            }
        }
        let bestCoarse = candidates.map(\.score).max() ?? 0
        candidates = Array(suppress(candidates.filter { $0.score >= bestCoarse - options.candidateMargin })
            .prefix(options.maxInstances + 2))
        guard let fine else { return Array(candidates.filter { $0.score >= template.threshold }.prefix(options.maxInstances)) }
        var hits: [Hit] = []
        let stepOffset = max(1, Self.scaleIndex(1.25) / 2)  // half the tutorial's 1.25 step
        let angleStep = options.angles.count > 1 ? abs(options.angles[1] - options.angles[0]) / 2 : 0
        for candidate in candidates {
            let onFine = rescale(candidate, to: fine, levelScale: options.refineScale ?? 1)
            let margin = max(4, 0.5 * Double(fine.width) / Double(coarse.width)) + 0.12 * max(onFine.width, onFine.height)
            if let hit = try refine(template, around: onFine, in: fine, margin: margin,
                                    scaleOffsets: [-stepOffset, -stepOffset / 2, 0, stepOffset / 2, stepOffset],
                                    angleOffsets: angleStep > 0 ? [-angleStep, 0, angleStep] : [0]),
               hit.score >= template.threshold {
                hits.append(hit)
            }
        }
        return Array(suppress(hits).prefix(options.maxInstances))
    }

    /// The best match near `hit` over nearby scales and angles, at `level`.
    private func refine(_ template: Template, around hit: Hit, in level: ImageBuffer, margin: Double,
                        scaleOffsets: [Int], angleOffsets: [Double]) throws -> Hit? {
        var best: Hit?
        let levelScale = hit.levelScale
        for offset in scaleOffsets {
            for angleOffset in angleOffsets {
                let index = hit.scaleIndex + offset
                let angle = hit.angle + angleOffset
                guard let drawn = try draw(template, levelScale: levelScale, scaleIndex: index, angle: angle) else { continue }
                let w = drawn.image.width, h = drawn.image.height
                let x0 = max(0, Int((hit.centerX - Double(w) / 2 - margin).rounded(.down)))
                let y0 = max(0, Int((hit.centerY - Double(h) / 2 - margin).rounded(.down)))
                let x1 = min(level.width, Int((hit.centerX + Double(w) / 2 + margin).rounded(.up)))
                let y1 = min(level.height, Int((hit.centerY + Double(h) / 2 + margin).rounded(.up)))
                guard x1 - x0 >= w, y1 - y0 >= h else { continue }
                let window = level.cView(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
                let (score, px, py) = try bestLocation(of: drawn.image.cView, in: window)
                if Double(score) > (best?.score ?? -2) {
                    best = Hit(score: Double(score), centerX: Double(x0 + px) + Double(w) / 2,
                               centerY: Double(y0 + py) + Double(h) / 2, scaleIndex: index, angle: angle,
                               width: drawn.fullWidth, height: drawn.fullHeight,
                               levelWidth: level.width, levelHeight: level.height, levelScale: levelScale)
                }
            }
        }
        return best
    }

    // MARK: - Preparing templates

    /// The template at a level, scale and angle: scaled, rotated about its
    /// centre, and cut to the largest axis-aligned rectangle inside the
    /// rotated outline. nil when too small to match reliably.
    private func draw(_ template: Template, levelScale: Double, scaleIndex: Int, angle: Double) throws -> Prepared? {
        let key = PreparedKey(template: ObjectIdentifier(template), levelScale: Int((levelScale * 1000).rounded()),
                              scaleIndex: scaleIndex, angleTenths: Int((angle * 10).rounded()))
        if let cached = prepared[key] { return cached }
        let factor = levelScale * Self.scale(scaleIndex)
        let fullWidth = Double(template.gray.width) * factor, fullHeight = Double(template.gray.height) * factor
        let w = Int(fullWidth.rounded()), h = Int(fullHeight.rounded())
        let minimum = options.minimumFrameSide * levelScale
        guard fullWidth >= max(4, minimum), fullHeight >= max(4, minimum) else { return nil }
        var image = try ImageOps.resized(template.gray, width: w, height: h, interpolation: .area)
        if angle != 0 {
            let rotated = try ImageOps.rotated(image, clockwiseDegrees: angle)
            let radians = abs(angle) * .pi / 180
            let k = min(Double(w) / (Double(w) * cos(radians) + Double(h) * sin(radians)),
                        Double(h) / (Double(w) * sin(radians) + Double(h) * cos(radians)))
            let cw = Int((Double(w) * k).rounded(.down)), ch = Int((Double(h) * k).rounded(.down))
            guard cw >= 4, ch >= 4 else { return nil }
            image = rotated.cropped(x: (w - cw) / 2, y: (h - ch) / 2, width: cw, height: ch)
        }
        let result = Prepared(image: image, fullWidth: fullWidth, fullHeight: fullHeight)
        if prepared.count > 4096 { prepared.removeAll() }
        prepared[key] = result
        return result
    }

    private func rescale(_ hit: Hit, to level: ImageBuffer, levelScale: Double) -> Hit {
        let fx = Double(level.width) / Double(hit.levelWidth), fy = Double(level.height) / Double(hit.levelHeight)
        return Hit(score: hit.score, centerX: hit.centerX * fx, centerY: hit.centerY * fy, scaleIndex: hit.scaleIndex,
                   angle: hit.angle, width: hit.width * fx, height: hit.height * fy,
                   levelWidth: level.width, levelHeight: level.height, levelScale: levelScale)
    }

    // MARK: - Bookkeeping

    private func updateTracks(_ key: ObjectIdentifier, _ hits: [Hit]) {
        if hits.isEmpty {
            tracks[key] = nil
        } else {
            tracks[key] = hits.map { Track(hit: $0) }
        }
    }

    private func prune(keeping live: Set<ObjectIdentifier>) {
        if prepared.keys.contains(where: { !live.contains($0.template) }) {
            prepared = prepared.filter { live.contains($0.key.template) }
        }
        tracks = tracks.filter { live.contains($0.key) }
        lastFullSearch = lastFullSearch.filter { live.contains($0.key) }
    }

    /// Best first, dropping any hit that overlaps a better one.
    private func suppress(_ hits: [Hit]) -> [Hit] {
        var kept: [Hit] = []
        for hit in hits.sorted(by: { $0.score > $1.score }) {
            let box = hit.box
            if kept.allSatisfy({ $0.box.intersectionOverUnion(box) <= options.suppressionOverlap }) { kept.append(hit) }
        }
        return kept
    }

    // MARK: - Score maps

    /// The `count` highest peaks of TM_CCOEFF_NORMED of `templ` over `image`,
    /// each at least a template's size from the others.
    private func peaks(of templ: ImageBuffer, in image: ImageBuffer, count: Int) throws -> [(score: Float, x: Int, y: Int)] {
        let (rw, rh) = try scoreMap(of: templ.cView, in: image.cView)
        var found: [(score: Float, x: Int, y: Int)] = []
        for _ in 0..<count {
            var best: Float = -2, bestIndex = -1
            for i in 0..<(rw * rh) where scores[i] > best && scores[i].isFinite {
                best = scores[i]
                bestIndex = i
            }
            guard bestIndex >= 0 else { break }
            let x = bestIndex % rw, y = bestIndex / rw
            found.append((best, x, y))
            // Blank out the neighbourhood so the next peak is another place.
            let rx = max(1, templ.width / 2), ry = max(1, templ.height / 2)
            for yy in max(0, y - ry)..<min(rh, y + ry + 1) {
                for xx in max(0, x - rx)..<min(rw, x + rx + 1) { scores[yy * rw + xx] = -2 }
            }
        }
        return found
    }

    /// The peak of TM_CCOEFF_NORMED of `templ` over `image`.
    func bestLocation(of templ: slcv_image, in image: slcv_image) throws -> (Float, Int, Int) {
        let (rw, rh) = try scoreMap(of: templ, in: image)
        var best: Float = -2, bestIndex = 0
        for i in 0..<(rw * rh) where scores[i] > best && scores[i].isFinite {
            best = scores[i]
            bestIndex = i
        }
        return (best, bestIndex % rw, bestIndex / rw)
    }

    private func scoreMap(of templ: slcv_image, in image: slcv_image) throws -> (Int, Int) {
        let rw = Int(image.width - templ.width) + 1, rh = Int(image.height - templ.height) + 1
        if rw * rh > scoreCapacity {
            scores.deallocate()
            scores = .allocate(capacity: rw * rh)
            scoreCapacity = rw * rh
        }
        try OpenCVError.check { slcv_match_template(image, templ, scores, Int32(rw), $0) }
        return (rw, rh)
    }
}
