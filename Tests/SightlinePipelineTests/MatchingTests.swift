import Foundation
import Testing
@testable import SightlineVision
@testable import SightlinePipeline
import SightlineTesting

@Suite struct MatchingTests {
    @Test func findsTheDemoTemplateWhereTheSceneSaysItIs() throws {
        let templateImage = try ImageIO.read(path: TestPaths.demoTemplate)
        let template = try Template(name: "demo", image: templateImage)
        var options = DemoSource.Options()
        options.seed = 11
        let source = DemoSource(options: options, template: templateImage, templateLabel: "demo")
        _ = try source.open()
        let matcher = TemplateMatcher()
        var hits = 0
        let frames = 150
        for _ in 0..<frames {
            let captured = try source.nextImage()
            // Skip ahead so the scene covers its whole range of scales and places.
            for _ in 0..<3 { _ = try source.nextImage() }
            let found = try matcher.match(templates: [template], gray: ImageOps.gray(captured.image))
            let truth = captured.groundTruth[0]
            let box = NormalizedBox(pixelX: truth.x, pixelY: truth.y, width: truth.w, height: truth.h,
                                    frameWidth: options.width, frameHeight: options.height)
            if let hit = found.first, hit.box.intersectionOverUnion(box) >= 0.5 { hits += 1 }
        }
        #expect(Double(hits) / Double(frames) >= 0.9, "recall \(hits)/\(frames)")
    }

    @Test func reportsNothingWhenTheTemplateIsAbsent() throws {
        let templateImage = try ImageIO.read(path: TestPaths.demoTemplate)
        let template = try Template(name: "demo", image: templateImage)
        // The demo's background with the template shrunk to nothing is a scene without it.
        var options = DemoSource.Options()
        options.minScale = 0.05
        options.maxScale = 0.05
        let source = DemoSource(options: options, template: templateImage, templateLabel: "demo")
        _ = try source.open()
        let matcher = TemplateMatcher()
        var falseAlarms = 0
        for _ in 0..<50 {
            falseAlarms += try matcher.match(templates: [template], gray: ImageOps.gray(try source.nextImage().image)).count
        }
        #expect(falseAlarms <= 1)
    }

    @Test func findsATemplateCutFromARealFrame() throws {
        let path = TestPaths.testData + "/templates/box_in_scene.png"
        try #require(FileManager.default.fileExists(atPath: path), "test data not found at \(path); set SIGHTLINE_TEST_DATA")
        let scene = try ImageIO.read(path: path)
        let cut = ImageBuffer(width: 90, height: 70)
        try ImageOps.resize(scene.cView(x: 200, y: 120, width: 90, height: 70), into: cut.cView, interpolation: .nearest)
        let matcher = TemplateMatcher()
        let found = try matcher.match(templates: [try Template(name: "cut", image: cut)],
                                      gray: try ImageOps.gray(scene))
        let expected = NormalizedBox(pixelX: 200, pixelY: 120, width: 90, height: 70,
                                     frameWidth: scene.width, frameHeight: scene.height)
        let hit = try #require(found.first)
        #expect(hit.box.intersectionOverUnion(expected) >= 0.7)
        #expect(hit.scale == 1)
        #expect(hit.score > 0.8)
    }

    /// box_in_scene.png, a template cut from it, and `absent` noise templates that are nowhere in it.
    static func sceneWithAbsentTemplates(_ absent: Int) throws -> (gray: ImageBuffer, templates: [Template]) {
        let path = TestPaths.testData + "/templates/box_in_scene.png"
        try #require(FileManager.default.fileExists(atPath: path), "test data not found at \(path); set SIGHTLINE_TEST_DATA")
        let scene = try ImageIO.read(path: path)
        var templates: [Template] = try (0..<absent).map { index in
            let noise = ImageBuffer(width: 60, height: 50)
            noise.bytes.update(repeating: 128, count: noise.byteCount)
            try ImageOps.addNoise(noise, seed: UInt64(index + 1), sigma: 50)
            return try Template(name: "absent\(index)", image: noise)
        }
        templates.append(try Template(name: "cut", image: scene.cropped(x: 200, y: 120, width: 90, height: 70)))
        return (try ImageOps.gray(scene), templates)
    }

    /// With frame times, a template out of view is searched once per
    /// lostSearchInterval: coming into view, it is found when its next search
    /// is due (within the interval), then tracked on every frame; a template
    /// the tracking search loses gets its full search on that same frame.
    @Test func anAbsentTemplateIsSearchedOncePerIntervalAndFoundWithinIt() throws {
        let (gray, templates) = try Self.sceneWithAbsentTemplates(0)
        let empty = ImageBuffer(width: gray.width, height: gray.height, channels: 1)
        empty.bytes.update(repeating: 128, count: empty.byteCount)
        let matcher = TemplateMatcher()
        let interval = matcher.options.lostSearchInterval
        let frame = 0.04
        #expect(try matcher.match(templates: templates, gray: empty, at: 0).isEmpty)
        var foundAt: Double?
        var time = frame
        while time < 1, foundAt == nil {
            if try !matcher.match(templates: templates, gray: gray, at: time).isEmpty { foundAt = time }
            time += frame
        }
        let found = try #require(foundAt)
        #expect(found >= interval - 1e-9, "not searched before its interval: found at \(found) s")
        #expect(found < interval + frame + 1e-9, "found when the interval was up: \(found) s")
        // Tracked now: found on every frame. Lost (the full search runs on the
        // frame that loses it), then back: found when the interval is up.
        #expect(try !matcher.match(templates: templates, gray: gray, at: found + frame).isEmpty)
        let lostAt = found + 2 * frame
        #expect(try matcher.match(templates: templates, gray: empty, at: lostAt).isEmpty)
        #expect(try matcher.match(templates: templates, gray: gray, at: lostAt + frame).isEmpty,
                "searched on the frame it was lost, so it waits for its interval")
        #expect(try !matcher.match(templates: templates, gray: gray, at: lostAt + interval).isEmpty)
        // Without frame times every call searches.
        #expect(try !TemplateMatcher().match(templates: templates, gray: gray).isEmpty)
    }

    @Test func absentTemplatesTakeTurnsAtTheFullSearchWithinTheBudget() throws {
        let (gray, templates) = try Self.sceneWithAbsentTemplates(15)
        var options = TemplateMatcher.Options()
        options.fullSearchBudget = 0  // one full search per frame
        let matcher = TemplateMatcher(options: options)
        var firstFound: Int?
        var foundAfterwards = 0
        for frame in 0..<30 {
            let found = try matcher.match(templates: templates, gray: gray)
            #expect(found.allSatisfy { $0.label == "cut" }, "noise templates are nowhere in the scene")
            if !found.isEmpty {
                if firstFound == nil { firstFound = frame } else { foundAfterwards += 1 }
            }
        }
        #expect(firstFound == 15, "the 16th template's turn comes on the 16th frame")
        #expect(foundAfterwards == 14, "once found it is tracked on every frame, without waiting for its turn")

        var unlimited = TemplateMatcher.Options()
        unlimited.fullSearchBudget = nil
        let all = try TemplateMatcher(options: unlimited).match(templates: templates, gray: gray)
        #expect(all.map(\.label) == ["cut"], "without a budget every template is searched on the first frame")
    }

    @Test func jpegRoundTripKeepsSizeAndColour() throws {
        let image = ImageBuffer(width: 320, height: 240)
        for y in 0..<240 { for x in 0..<320 {
            let p = image.bytes + y * image.stride + x * 3
            p[0] = 200; p[1] = 50; p[2] = x < 160 ? 20 : 240
        } }
        let jpeg = try JPEGEncoder(quality: 90).encode(image)
        #expect(jpeg.starts(with: [0xFF, 0xD8]))
        let decoder = try JPEGDecoder()
        #expect(try decoder.size(of: jpeg) == (320, 240))
        let back = try decoder.decode(jpeg)
        let (b, g, r) = back.pixel(x: 40, y: 120)
        #expect(abs(Int(b) - 200) < 12 && abs(Int(g) - 50) < 12 && abs(Int(r) - 20) < 12)
        #expect(abs(Int(back.pixel(x: 280, y: 120).2) - 240) < 12)
        #expect(throws: JPEGError.self) { try decoder.decode(Data([0xFF, 0xD8, 0xFF, 0x00, 1, 2, 3])) }
    }

    @Test func demoSceneIsDeterministic() throws {
        let templateImage = try ImageIO.read(path: TestPaths.demoTemplate)
        func frames() throws -> [UInt8] {
            let source = DemoSource(options: DemoSource.Options(), template: templateImage, templateLabel: "demo")
            _ = try source.open()
            var bytes: [UInt8] = []
            for _ in 0..<3 {
                let image = try source.nextImage().image
                bytes += UnsafeBufferPointer(start: image.bytes, count: image.byteCount).prefix(5000)
            }
            return bytes
        }
        #expect(try frames() == frames())
    }
}
