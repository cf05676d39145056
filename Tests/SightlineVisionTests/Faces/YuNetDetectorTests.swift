import Foundation
import Testing
@testable import SightlineVision
import SightlineTesting

@Suite("YuNet face detection on the shared photos")
struct YuNetDetectorTests {
    static func detector(_ options: YuNetDetector.Options = .stillImage,
                         model: String = FaceTestData.model320) throws -> YuNetDetector {
        try YuNetDetector(modelPath: FaceTestData.modelPath(model), options: options)
    }

    @Test("reads the fixed input size from the model file")
    func inputSizeFromModel() throws {
        #expect(try Self.detector(model: FaceTestData.model320).inputSize == 320)
        #expect(try Self.detector(model: FaceTestData.model640).inputSize == 640)
        #expect(try Self.detector().name == "yunet-320")
    }

    @Test("finds at least 16 of the 18 labelled faces with at most one false positive")
    func labelledFaces() throws {
        let result = try FaceTestData.evaluate(Self.detector())
        print("YuNet-320 dlib photos: found \(result.found)/\(result.labelled), false positives \(result.falsePositives)")
        #expect(result.labelled == 18)
        #expect(result.found >= 16)
        #expect(result.falsePositives <= 1)
    }

    @Test("roll: median error at most 3°, 90 % of faces within 8°")
    func rollAccuracy() throws {
        let result = try FaceTestData.evaluate(Self.detector())
        let errors = result.rollErrors.sorted()
        let within8 = Double(errors.filter { $0 <= 8 }.count) / Double(max(1, errors.count))
        print("YuNet-320 roll errors (°): median \(FaceTestData.median(errors)), within 8°: \(within8), all \(errors.map { ($0 * 10).rounded() / 10 })")
        #expect(errors.count >= 16)
        #expect(FaceTestData.median(errors) <= 3)
        #expect(within8 >= 0.9)
    }

    @Test("exactly one face in grace_hopper.jpg, upright and frontal, with all five landmarks")
    func graceHopper() throws {
        let faces = try Self.detector().detect(in: FaceTestData.image("grace_hopper.jpg"), gray: nil, limit: 10)
        #expect(faces.count == 1)
        let face = try #require(faces.first)
        let landmarks = try #require(face.landmarks)
        #expect(landmarks.rightEye.x < landmarks.leftEye.x, "the subject's right eye is on the image's left")
        #expect(landmarks.nose != nil && landmarks.mouthLeft != nil && landmarks.mouthRight != nil)
        #expect(abs(try #require(face.roll)) < 5)
        #expect(abs(try #require(face.yaw)) < 15)
    }

    @Test("finds the player's face in messi5.jpg (about 35 px wide near x=222, y=93)")
    func messi() throws {
        let faces = try Self.detector().detect(in: FaceTestData.image("messi5.jpg"), gray: nil, limit: 10)
        let player = faces.first { face in
            let cx = face.box.x + face.box.w / 2, cy = face.box.y + face.box.h / 2
            return abs(cx - 222 - 17) < 30 && abs(cy - 93 - 17) < 30 && face.box.w > 15 && face.box.w < 70
        }
        #expect(player != nil, "faces found: \(faces.map { $0.box })")
    }

    @Test("grace_hopper.jpg turned from -45° to +45° is found with roll within 5° of the turn",
          arguments: stride(from: -45.0, through: 45.0, by: 15.0).map { $0 })
    func rotated(angle: Double) throws {
        let image = try ImageOps.rotated(FaceTestData.image("grace_hopper.jpg"), clockwiseDegrees: angle)
        let faces = try Self.detector().detect(in: image, gray: nil, limit: 10)
        let face = try #require(faces.max { $0.score < $1.score }, "no face at \(angle)°")
        let roll = try #require(face.roll)
        print("grace_hopper turned \(angle)°: roll \(roll)")
        #expect(abs(FaceGeometry.normalizedDegrees(roll - angle)) <= 5)
    }

    @Test("live pacing: a tracked face refined moments ago gets no second pass and no roll; a new face is refined")
    func refinePacing() throws {
        var options = YuNetDetector.Options()
        options.refineLandmarks = true
        options.refineEverySeconds = 60
        let detector = try Self.detector(options)
        let image = try ImageOps.rotated(FaceTestData.image("grace_hopper.jpg"), clockwiseDegrees: 20)
        var before = detector.refiner.forwardPasses
        let first = try #require(try detector.detect(in: image, gray: nil, limit: 1).first)
        #expect(detector.refiner.forwardPasses > before)   // new: refined
        var tracked = first
        tracked.roll = 17.5
        before = detector.refiner.forwardPasses
        let again = try #require(try detector.detect(in: image, gray: nil, limit: 1, hints: [tracked]).first)
        #expect(detector.refiner.forwardPasses == before)  // refined a moment ago: not again
        #expect(again.roll == nil)                         // the tracker carries its roll
        // Without a tracked face over it, it counts as new and is refined again.
        before = detector.refiner.forwardPasses
        _ = try detector.detect(in: image, gray: nil, limit: 1, hints: [])
        #expect(detector.refiner.forwardPasses > before)
    }

    @Test("live pacing: a face read for smile and eyes moments ago carries that reading instead of a new one")
    func attributePacing() throws {
        var options = YuNetDetector.Options()
        options.attributesEverySeconds = 60
        let detector = try Self.detector(options)
        let image = try FaceTestData.image("grace_hopper.jpg")
        let first = try #require(try detector.detect(in: image, gray: nil, limit: 1).first)
        #expect(detector.lastPass.attributeReads == 1)
        let again = try #require(try detector.detect(in: image, gray: nil, limit: 1).first)
        #expect(detector.lastPass.attributeReads == 0)
        #expect(again.smile == first.smile && again.eyesClosed == first.eyesClosed)
        #expect(first.smile != nil)
    }

    @Test("live budget: a pass reads at most attributesPerPass faces, never-read ones first, so every face of a crowd is read within a few passes")
    func attributeBudget() throws {
        var options = YuNetDetector.Options()
        options.attributesEverySeconds = 60
        options.attributesPerPass = 2
        let detector = try Self.detector(options)
        // Six portraits of Grace Hopper, 180 px wide, on one 540x420 picture.
        let crowd = try Self.portraits(rows: 2, cellWidth: 180, cellHeight: 210)
        var judged: [Int] = []
        for pass in 1...3 {
            let faces = try detector.detect(in: crowd, gray: nil, limit: 10)
            #expect(faces.count == 6, "pass \(pass): \(faces.count) faces")
            #expect(detector.lastPass.attributeReads == 2)
            judged.append(faces.filter { $0.smile != nil }.count)
        }
        #expect(judged == [2, 4, 6], "faces carrying a smile after each pass: \(judged)")
    }

    /// Portraits of Grace Hopper, `cellWidth` x `cellHeight` each, three to a row.
    static func portraits(rows: Int, cellWidth: Int, cellHeight: Int) throws -> ImageBuffer {
        let grace = try FaceTestData.image("grace_hopper.jpg")
        let cell = try ImageOps.resized(grace, width: cellWidth, height: cellHeight)
        let crowd = ImageBuffer(width: 3 * cellWidth, height: rows * cellHeight, channels: 3)
        for index in 0..<(3 * rows) {
            let x0 = (index % 3) * cellWidth, y0 = (index / 3) * cellHeight
            for row in 0..<cellHeight {
                (crowd.bytes + (y0 + row) * crowd.stride + x0 * 3)
                    .update(from: cell.bytes + row * cell.stride, count: cellWidth * 3)
            }
        }
        return crowd
    }

    @Test("a crowd's pass (8 or more tracked faces) looks for at most crowdCropsPerPass missed tracks; the others are carried as predicted, without a roll, to be looked at first next time")
    func crowdCropBudget() throws {
        var options = YuNetDetector.Options()
        options.refineLandmarks = true
        options.refineEverySeconds = 60
        options.confirmMissedTracks = true
        options.attributes = nil
        options.checkPersons = false
        // Nine portraits, faces about 55 px, on one 360x420 picture.
        let picture = try Self.portraits(rows: 3, cellWidth: 120, cellHeight: 140)
        let found = try Self.detector(options).detect(in: picture, gray: nil, limit: 50)
        #expect(found.count == 9)
        // Six tracks where there is no face any more (the picture's edge strip is
        // filled black): a pass misses them and a crop finds nothing there.
        for row in 0..<picture.height { (picture.bytes + row * picture.stride).update(repeating: 0, count: 3 * 24) }
        let gone = (0..<6).map { FaceObservation(box: PixelRect(x: 0, y: Double($0) * 60, w: 24, h: 24), score: 0.9) }
        var crowd = options
        crowd.crowdFaces = 8
        crowd.crowdCropsPerPass = 4
        let budgeted = try Self.detector(crowd)
        let faces = try budgeted.detect(in: picture, gray: nil, limit: 50, hints: found + gone)
        // Four looked for and not found (dropped), two carried for a later pass.
        let carried = faces.filter { $0.box.x == 0 }
        #expect(faces.count == 11, "\(faces.map(\.box))")
        #expect(carried.count == 2 && carried.allSatisfy { $0.roll == nil })
        // The tracker drops what was looked for and not found; the carried two come first next time.
        let next = try budgeted.detect(in: picture, gray: nil, limit: 50, hints: found + carried)
        #expect(next.count == 9, "\(next.map(\.box))")
        // Without the crowd budget every missed track is looked for in the one pass.
        let unbudgeted = try Self.detector(options).detect(in: picture, gray: nil, limit: 50, hints: found + gone)
        #expect(unbudgeted.count == 9)
    }

    @Test("person checks per pass: new faces past the budget are left for a later pass, the largest checked first")
    func personCheckBudget() throws {
        var options = YuNetDetector.Options.stillImage
        options.personChecksPerPass = 3
        let detector = try Self.detector(options)
        let photo = try FaceTestData.image("2007_007763.jpg")
        let all = try Self.detector().detect(in: photo, gray: nil, limit: 50)
        let budgeted = try detector.detect(in: photo, gray: nil, limit: 50)
        #expect(all.count == 7)
        #expect(budgeted.count == 3)
        let widest = all.map(\.box.w).sorted(by: >).prefix(3)
        #expect(budgeted.map(\.box.w).sorted(by: >) == Array(widest))
        // Faces already tracked (hints) are not checked again, so all of them are kept.
        let again = try detector.detect(in: photo, gray: nil, limit: 50, hints: all)
        #expect(again.count == 7)
    }

    @Test("a tracked face's roll as a hint settles the second landmark pass in fewer passes, to the same roll")
    func rollHint() throws {
        var options = YuNetDetector.Options()
        options.refineLandmarks = true
        let detector = try Self.detector(options)
        let image = try ImageOps.rotated(FaceTestData.image("grace_hopper.jpg"), clockwiseDegrees: 20)
        var before = detector.refiner.forwardPasses
        let plain = try #require(try detector.detect(in: image, gray: nil, limit: 1).first)
        let plainPasses = detector.refiner.forwardPasses - before
        before = detector.refiner.forwardPasses
        let hinted = try #require(try detector.detect(in: image, gray: nil, limit: 1, hints: [plain]).first)
        let hintedPasses = detector.refiner.forwardPasses - before
        print("roll hint: \(plainPasses) passes to \(plain.roll ?? .nan)°, hinted \(hintedPasses) passes to \(hinted.roll ?? .nan)°")
        #expect(hintedPasses < plainPasses)
        #expect(abs(try #require(hinted.roll) - (try #require(plain.roll))) <= LandmarkRefiner.uprightTolerance)
        #expect(abs(try #require(hinted.roll) - 20) <= 5)
        // A hint elsewhere in the frame is not used.
        var elsewhere = plain
        elsewhere.box = PixelRect(x: 0, y: 0, w: 20, h: 20)
        before = detector.refiner.forwardPasses
        _ = try detector.detect(in: image, gray: nil, limit: 1, hints: [elsewhere])
        #expect(detector.refiner.forwardPasses - before == plainPasses)
    }

    @Test("a region of interest limits where faces are looked for")
    func regionOfInterest() throws {
        var options = YuNetDetector.Options()
        let image = try FaceTestData.image("2008_001322.jpg")
        options.regionOfInterest = NormalizedBox(x: 0, y: 0, w: 0.4, h: 1)
        let left = try Self.detector(options).detect(in: image, gray: nil, limit: 10)
        let all = try Self.detector().detect(in: image, gray: nil, limit: 10)
        #expect(all.count >= 3)
        #expect(!left.isEmpty && left.count < all.count)
        #expect(left.allSatisfy { $0.box.x + $0.box.w / 2 < 0.4 * Double(image.width) })
    }

    @Test("at most `limit` faces, the best scores first")
    func limit() throws {
        let image = try FaceTestData.image("2007_007763.jpg")
        let faces = try Self.detector().detect(in: image, gray: nil, limit: 2)
        #expect(faces.count == 2)
        #expect(faces[0].score >= faces[1].score)
    }

    @Test("a missing model file is an error that says what to set")
    func missingModel() {
        #expect(throws: FaceDetectorError.self) { try YuNetDetector(modelPath: "/nonexistent/model.onnx") }
        let message = "\(FaceDetectorError.modelUnreadable(path: "/x.onnx"))"
        #expect(message.contains("SIGHTLINE_FACE_MODEL"))
    }
}
