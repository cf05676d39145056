import Foundation
import Testing
@testable import SightlineVision
import SightlineTesting

/// Optical flow on a real face (the demo's portrait, `config/demo-face.jpg`)
/// pasted into a textured gray frame and moved between two frames by a known
/// shift, zoom and turn.
@Suite struct FaceFlowTests {
    static let portrait: ImageBuffer = {
        // swiftlint:disable:next force_try
        try! ImageIO.read(path: TestPaths.repository + "/config/demo-face.jpg", channels: 1)
    }()

    /// A 640x480 frame: soft noise behind the portrait, which is drawn at
    /// `scale` of its size with its centre at `centre`, turned clockwise by `turn`.
    static func frame(centre: PixelPoint, scale: Double, turn: Double) throws -> ImageBuffer {
        let image = ImageBuffer(width: 640, height: 480, channels: 1)
        image.bytes.update(repeating: 110, count: image.byteCount)
        try ImageOps.addNoise(image, seed: 7, sigma: 25)
        try ImageOps.blur(image, kernel: 9)
        try ImageOps.paste(portrait, onto: image, centerX: centre.x, centerY: centre.y, scale: scale,
                           clockwiseDegrees: turn)
        return image
    }

    /// The face's box in a frame drawn as above (the portrait's middle part).
    static func box(centre: PixelPoint, scale: Double) -> PixelRect<Double> {
        let w = Double(portrait.width) * scale * 0.6, h = Double(portrait.height) * scale * 0.6
        return PixelRect(x: centre.x - w / 2, y: centre.y - h / 2, w: w, h: h)
    }

    @Test("a shift, a zoom and a turn of the face are measured as they were drawn",
          arguments: [(dx: 6.0, dy: -4.0, zoom: 1.0, turn: 0.0), (dx: 0.0, dy: 0.0, zoom: 1.0, turn: 4.0),
                      (dx: 3.0, dy: 2.0, zoom: 1.06, turn: -3.0), (dx: -12.0, dy: 9.0, zoom: 0.95, turn: 2.0)])
    func measuresTheMotionItWasGiven(_ step: (dx: Double, dy: Double, zoom: Double, turn: Double)) throws {
        let scale = 130 / Double(Self.portrait.width)  // a face about 80 pixels wide
        let centre = PixelPoint(x: 300, y: 220)
        let moved = PixelPoint(x: centre.x + step.dx, y: centre.y + step.dy)
        let first = try Self.frame(centre: centre, scale: scale, turn: 10)
        let second = try Self.frame(centre: moved, scale: scale * step.zoom, turn: 10 + step.turn)
        let flow = FaceFlow()
        let box = Self.box(centre: centre, scale: scale)
        let onAreas = try #require(try flow.motion(of: box, landmarks: nil, from: first, to: second))
        // The same measure on the two frames' whole pyramids (FlowPyramid).
        let onPyramids = try #require(try flow.motion(of: box, landmarks: nil,
                                                      from: FlowPyramid(first, levels: flow.options.levels),
                                                      to: FlowPyramid(second, levels: flow.options.levels)))
        for (motion, how) in [(onAreas, "around the face"), (onPyramids, "on whole pyramids")] {
            #expect(abs(motion.degrees - step.turn) < 0.5, "\(how): turn \(motion.degrees), drawn \(step.turn)")
            #expect(abs(motion.scale - step.zoom) < 0.01, "\(how): scale \(motion.scale), drawn \(step.zoom)")
            let landed = motion.transform.apply(centre)
            #expect(landed.distance(to: moved) < 0.5, "\(how): centre went to \(landed), drawn at \(moved)")
            #expect(motion.points >= 8)
        }
    }

    @Test("many faces are measured on whole-frame pyramids, one or two small ones around themselves")
    func wholeFrameWhenFacesCoverMuch() {
        let face = { (x: Double, side: Double) in PixelRect(x: x, y: 150, w: side, h: side) }
        #expect(!FaceFlow.prefersWholeFrame([face(300, 80)], width: 640, height: 480))
        #expect(!FaceFlow.prefersWholeFrame([face(100, 60), face(400, 60)], width: 640, height: 480))
        #expect(FaceFlow.prefersWholeFrame((0..<6).map { face(Double($0) * 100, 100) }, width: 640, height: 480))
        #expect(!FaceFlow.prefersWholeFrame([], width: 640, height: 480))
    }

    @Test("a pyramid refuses a colour image, and tracking refuses pyramids of two sizes")
    func pyramidsCheckTheirImages() throws {
        #expect(throws: OpenCVError.self) { try FlowPyramid(ImageBuffer(width: 64, height: 48, channels: 3), levels: 2) }
        let small = try FlowPyramid(ImageBuffer(width: 64, height: 48, channels: 1), levels: 2)
        let large = try FlowPyramid(ImageBuffer(width: 128, height: 96, channels: 1), levels: 2)
        #expect(try FaceFlow().motion(of: PixelRect(x: 10, y: 10, w: 30, h: 30), landmarks: nil, from: small,
                                      to: large) == nil)
    }

    @Test("points on a picture that changed to another one do not agree on a motion")
    func aFaceThatIsGoneHasNoMotion() throws {
        let scale = 130 / Double(Self.portrait.width)
        let centre = PixelPoint(x: 300, y: 220)
        let first = try Self.frame(centre: centre, scale: scale, turn: 0)
        let other = ImageBuffer(width: 640, height: 480, channels: 1)
        other.bytes.update(repeating: 90, count: other.byteCount)
        try ImageOps.addNoise(other, seed: 99, sigma: 40)
        #expect(try FaceFlow().motion(of: Self.box(centre: centre, scale: scale), landmarks: nil,
                                      from: first, to: other) == nil)
    }

    @Test("the least-squares similarity gives back a known one, and none for a single point")
    func similarityFit() throws {
        let known = AffineTransform.rotation(about: PixelPoint(x: 50, y: 40), clockwiseDegrees: 12, scale: 1.1,
                                             to: PixelPoint(x: 60, y: 35))
        let points = (0..<9).map { PixelPoint(x: Double($0 % 3) * 20, y: Double($0 / 3) * 15) }
        let fit = try #require(FaceFlow.similarity(points.map { ($0, known.apply($0)) }))
        for (value, expected) in zip(fit.matrix, known.matrix) { #expect(abs(value - expected) < 1e-9) }
        #expect(FaceFlow.similarity([(points[0], points[1])]) == nil)
    }
}

/// The tracker carried by measured motion rather than by its velocity.
@Suite struct FaceTrackerFlowTests {
    static func step(turn: Double, dx: Double, scale: Double = 1, about centre: PixelPoint) -> FaceFlow.Motion {
        let transform = AffineTransform.rotation(about: centre, clockwiseDegrees: turn, scale: scale,
                                                 to: PixelPoint(x: centre.x + dx, y: centre.y))
        return FaceFlow.Motion(transform: transform, degrees: turn, scale: scale, points: 20)
    }

    @Test("between detections a face moves, grows and turns by its flow, with no velocity yet")
    func predictionFollowsTheFlow() throws {
        let tracker = FaceTracker()
        let face = FaceObservation(box: PixelRect(x: 100, y: 100, w: 80, h: 80), score: 0.9, roll: 5)
        _ = tracker.update([face], at: 0)
        var centre = PixelPoint(x: 140, y: 140)
        for frame in 1...5 {
            tracker.move(1, by: Self.step(turn: 2, dx: 4, scale: 1.02, about: centre),
                         from: Double(frame - 1) / 25, to: Double(frame) / 25)
            centre.x += 4
        }
        let carried = try #require(tracker.predict(at: 5.0 / 25).first)
        #expect(abs((carried.observation.roll ?? 0) - 15) < 1e-9)
        #expect(abs(TrackGeometry.centre(carried.observation.box).x - 160) < 1e-6)
        #expect(abs(carried.observation.box.w - 80 * pow(1.02, 5)) < 1e-6)
        // Without flow the same track would have stood still (one detection: no velocity).
        let still = FaceTracker()
        _ = still.update([face], at: 0)
        #expect(still.predict(at: 5.0 / 25).first?.observation.box.x == 100)
    }

    @Test("a detection of a frame a few frames back is matched where the face was then, and its roll compared with the flow's roll then")
    func aLateDetectionIsComparedWithTheFlowAtItsFrame() throws {
        let tracker = FaceTracker()
        _ = tracker.update([FaceObservation(box: PixelRect(x: 100, y: 100, w: 60, h: 60), score: 0.9, roll: 0)], at: 0)
        // The face turns 3° and moves 10 px a frame for 6 frames.
        for frame in 1...6 {
            let centre = PixelPoint(x: 130 + 10 * Double(frame - 1), y: 130)
            tracker.move(1, by: Self.step(turn: 3, dx: 10, about: centre), from: Double(frame - 1) / 25,
                         to: Double(frame) / 25)
        }
        // A pass on frame 3 saw it 30 px on (far from where it stands now, at frame 6), at 9° as the flow says.
        let late = FaceObservation(box: PixelRect(x: 130, y: 100, w: 60, h: 60), score: 0.9, roll: 9)
        let ids = tracker.update([late], at: 3.0 / 25).map(\.id)
        #expect(ids == [1])
        let now = try #require(tracker.predict(at: 6.0 / 25).first)
        // Roll: the reading agreed with the flow at frame 3, and the 3 frames since add 9°.
        #expect(abs((now.observation.roll ?? 0) - 18) < 1e-6)
        #expect(abs(TrackGeometry.centre(now.observation.box).x - 190) < 1e-6)
    }

    @Test("a frame without flow is bridged by the velocity and the flow goes on after it")
    func aFrameWithoutFlowIsBridged() throws {
        let tracker = FaceTracker()
        _ = tracker.update([FaceObservation(box: PixelRect(x: 100, y: 100, w: 60, h: 60), score: 0.9, roll: 0)], at: 0)
        _ = tracker.update([FaceObservation(box: PixelRect(x: 104, y: 100, w: 60, h: 60), score: 0.9, roll: 0)], at: 0.04)
        // Velocity 100 px/s; frame 2 had no flow, frame 3 did (2° and 4 px).
        let bridged = try #require(tracker.observation(of: 1, at: 0.08))
        #expect(abs(bridged.box.x - 108) < 1e-6)
        tracker.move(1, by: Self.step(turn: 2, dx: 4, about: TrackGeometry.centre(bridged.box)), from: 0.08, to: 0.12)
        let now = try #require(tracker.predict(at: 0.12).first)
        #expect(abs(now.observation.box.x - 112) < 1e-6)
        #expect(abs((now.observation.roll ?? 0) - 2) < 1e-6)
    }
}
