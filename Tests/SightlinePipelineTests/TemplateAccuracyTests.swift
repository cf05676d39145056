import Foundation
import Testing
@testable import SightlineVision
@testable import SightlinePipeline
import SightlineTesting

/// Accuracy of the matcher on composites made here: the logos from
/// ../shared/testdata/templates pasted into real backgrounds (frames of
/// vtest.avi, box_in_scene.png) at scales 0.5-2.0, rotations within ±10°,
/// with blur and noise.
@Suite(.serialized) struct TemplateAccuracyTests {
    static let logoNames = ["LinuxLogo.jpg", "WindowsLogo.jpg", "opencv-logo.png"]
    /// The width templates are uploaded at; composites paste them at 0.5-2x that.
    static let templateWidth = 120

    struct Composite {
        let image: ImageBuffer
        let truth: NormalizedBox
    }

    private func requireData() throws -> String {
        let dir = TestPaths.testData
        try #require(FileManager.default.fileExists(atPath: dir + "/video/vtest.avi"),
                     "test data not found at \(dir); set SIGHTLINE_TEST_DATA")
        return dir
    }

    private func templates(_ dir: String) throws -> [Template] {
        try Self.logoNames.map { name in
            let logo = try ImageIO.read(path: dir + "/templates/" + name)
            let height = Int((Double(logo.height) * Double(Self.templateWidth) / Double(logo.width)).rounded())
            let image = try ImageOps.resized(logo, width: Self.templateWidth, height: height)
            return try Template(name: (name as NSString).deletingPathExtension, image: image)
        }
    }

    /// Frames of vtest.avi (every 20th) and box_in_scene.png.
    private func backgrounds(_ dir: String, count: Int) throws -> [ImageBuffer] {
        let video = VideoCaptureSource(uri: dir + "/video/vtest.avi", kind: .file(pace: .max))
        _ = try video.open()
        defer { video.close() }
        var frames: [ImageBuffer] = [try ImageIO.read(path: dir + "/templates/box_in_scene.png")]
        while frames.count < count {
            let image = try video.nextImage().image
            for _ in 0..<19 { _ = try video.nextImage() }
            frames.append(image)
        }
        return frames
    }

    private func composite(_ template: Template, on background: ImageBuffer, rng: inout SplitMix64) throws -> Composite {
        let frame = background.copy()
        let scale = exp(Double.random(in: log(0.5)...log(2.0), using: &rng))
        let angle = Double.random(in: -10...10, using: &rng)
        let w = Double(template.image.width) * scale, h = Double(template.image.height) * scale
        let reach = 0.5 * (abs(w * cos(angle * .pi / 180)) + abs(h * sin(angle * .pi / 180)))
        let reachY = 0.5 * (abs(w * sin(angle * .pi / 180)) + abs(h * cos(angle * .pi / 180)))
        let cx = Double.random(in: reach...(Double(frame.width) - reach), using: &rng)
        let cy = Double.random(in: reachY...(Double(frame.height) - reachY), using: &rng)
        try ImageOps.paste(template.image, onto: frame, centerX: cx, centerY: cy, scale: scale, clockwiseDegrees: angle)
        try ImageOps.blur(frame, kernel: 5, sigma: 1.0)
        try ImageOps.addNoise(frame, seed: rng.next(), sigma: 5)
        let truth = NormalizedBox(pixelX: cx - w / 2, pixelY: cy - h / 2, width: w, height: h,
                                  frameWidth: frame.width, frameHeight: frame.height)
        return Composite(image: frame, truth: truth)
    }

    private static func rotationMatcher() -> TemplateMatcher {
        var options = TemplateMatcher.Options()
        options.angles = TemplateMatcher.Options.angles(range: 10, step: 5)
        options.tracking = false
        return TemplateMatcher(options: options)
    }

    @Test func recallOnCompositesIsAtLeast95Percent() throws {
        let dir = try requireData()
        let templates = try templates(dir)
        let backgrounds = try backgrounds(dir, count: 12)
        let matcher = Self.rotationMatcher()
        var rng = SplitMix64(seed: 2024)
        var found = 0, total = 0
        var misses: [String] = []
        for round in 0..<3 {
            for (index, background) in backgrounds.enumerated() {
                let template = templates[(index + round) % templates.count]
                let scene = try composite(template, on: background, rng: &rng)
                let hits = try matcher.match(templates: [template], gray: ImageOps.gray(scene.image))
                total += 1
                if let hit = hits.first, hit.box.intersectionOverUnion(scene.truth) >= 0.5 {
                    found += 1
                } else {
                    misses.append("\(template.name) on background \(index): \(hits.first.map { "\($0.box) \($0.score)" } ?? "nothing")")
                }
            }
        }
        #expect(Double(found) / Double(total) >= 0.95, "recall \(found)/\(total); missed: \(misses)")
    }

    @Test func atMostOneFalseAlarmPer100FramesWithoutTheTemplate() throws {
        let dir = try requireData()
        let templates = try templates(dir)
        let backgrounds = try backgrounds(dir, count: 34)
        let matcher = Self.rotationMatcher()
        var rng = SplitMix64(seed: 99)
        var alarms: [String] = []
        var frames = 0
        for template in templates {
            for (index, background) in backgrounds.enumerated() {
                let frame = background.copy()
                try ImageOps.blur(frame, kernel: 5, sigma: 1.0)
                try ImageOps.addNoise(frame, seed: rng.next(), sigma: 5)
                frames += 1
                for hit in try matcher.match(templates: [template], gray: ImageOps.gray(frame)) {
                    alarms.append("\(template.name) on \(index): \(hit.box) \(hit.score)")
                }
            }
        }
        #expect(frames >= 100)
        #expect(Double(alarms.count) <= Double(frames) / 100, "false alarms in \(frames) frames: \(alarms)")
    }

    @Test func findsTheTiltedPartlyHiddenBox() throws {
        let dir = try requireData()
        let box = try Template(name: "box", image: ImageIO.read(path: dir + "/templates/box.png"), threshold: 0.4)
        let scene = try ImageIO.read(path: dir + "/templates/box_in_scene.png")
        var options = TemplateMatcher.Options()
        options.angles = TemplateMatcher.Options.angles(range: 20, step: 5)
        options.scales = (0...16).map { 0.35 * pow(1.1, Double($0)) }
        let hits = try TemplateMatcher(options: options).match(templates: [box], gray: ImageOps.gray(scene))
        // Measured by hand: the box's corners span x 95-291, y 163-293 in the scene.
        let truth = NormalizedBox(pixelX: 95, pixelY: 163, width: 196, height: 130, frameWidth: scene.width, frameHeight: scene.height)
        let hit = try #require(hits.first, "box not found")
        #expect(hit.box.intersectionOverUnion(truth) >= 0.5, "found \(hit.box) score \(hit.score) angle \(hit.angle ?? 0)")
        #expect((hit.angle ?? 0) > 0, "the box is tilted clockwise; found angle \(hit.angle ?? 0)")
    }
}
