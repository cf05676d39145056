import Foundation
import Testing
@testable import SightlineVision
import SightlineTesting

/// dlib's 68-point fit, what is measured from it, the judging limits and the
/// person check. Tests that need dlib's model (Debian's libdlib-data) or the
/// labelled photos skip with a message saying what is missing.
@Suite("Face shape: 68 points, judging limits, person check")
struct FaceShapeTests {
    static let modelPath = FaceShapeModel.defaultPath
    static var hasModel: Bool { FileManager.default.fileExists(atPath: modelPath) }
    static let noModel: Comment = "dlib's model \(modelPath) is missing (apt-get install libdlib-data)"
    static var labelledFaces: String {
        // Gathered by scripts/fetch-labelled-faces.sh (scripts/setup.sh --tests runs it), as for the e2e test.
        ProcessInfo.processInfo.environment["SIGHTLINE_LABELLED_FACES"] ?? TestPaths.repository + "/.build/labelled-faces"
    }

    /// A frontal face's 68 points (iBUG layout) with eyes of the given aspect ratio
    /// and a mouth whose lips are `open` apart and corners lifted by `lift` (pixels), `wide`
    /// times its usual width (40 px, 0.57 of the distance between the outer eye corners).
    static func shape(eyeRatio: Double, open: Double = 0, lift: Double = 0, wide: Double = 1) -> FaceShape {
        var p = [PixelPoint](repeating: PixelPoint(x: 0, y: 0), count: 68)
        for i in 0...16 { p[i] = PixelPoint(x: 40 + Double(i) * 7.5, y: 100 + abs(Double(i) - 8) * -4 + 30) }
        for i in 17...26 { p[i] = PixelPoint(x: 50 + Double(i - 17) * 10, y: 70) }
        for i in 27...30 { p[i] = PixelPoint(x: 100, y: 80 + Double(i - 27) * 8) }
        for i in 31...35 { p[i] = PixelPoint(x: 90 + Double(i - 31) * 5, y: 112) }
        func eye(_ first: Int, _ cx: Double) {
            let half = 10.0, h = eyeRatio * 2 * half / 2
            p[first] = PixelPoint(x: cx - half, y: 85); p[first + 3] = PixelPoint(x: cx + half, y: 85)
            p[first + 1] = PixelPoint(x: cx - 4, y: 85 - h); p[first + 2] = PixelPoint(x: cx + 4, y: 85 - h)
            p[first + 4] = PixelPoint(x: cx + 4, y: 85 + h); p[first + 5] = PixelPoint(x: cx - 4, y: 85 + h)
        }
        eye(36, 75); eye(42, 125)
        func x(_ value: Double) -> Double { 100 + (value - 100) * wide }
        p[48] = PixelPoint(x: x(80), y: 130 - lift); p[54] = PixelPoint(x: x(120), y: 130 - lift)
        for i in 49...53 { p[i] = PixelPoint(x: x(80 + Double(i - 48) * 6.7), y: 127 - open / 2) }
        for i in 55...59 { p[i] = PixelPoint(x: x(120 - Double(i - 54) * 6.7), y: 133 + open / 2) }
        p[60] = PixelPoint(x: x(83), y: 130 - lift); p[64] = PixelPoint(x: x(117), y: 130 - lift)
        for i in 61...63 { p[i] = PixelPoint(x: x(83 + Double(i - 60) * 8.5), y: 130 - open / 2) }
        for i in 65...67 { p[i] = PixelPoint(x: x(117 - Double(i - 64) * 8.5), y: 130 + open / 2) }
        return FaceShape(points: p)
    }

    @Test("eye texture: a sclera beside an iris between the lids is not flat; a shut lid's shaded skin is")
    func eyeTexture() {
        // The synthetic face's lids 0.25 apart (eyes 20 px wide at x 65-85 and 115-135, y 85).
        let shape = Self.shape(eyeRatio: 0.25)
        func image(open: Bool) -> ImageBuffer {
            let image = ImageBuffer(width: 200, height: 200, channels: 1)
            image.bytes.update(repeating: 150, count: image.byteCount)
            for y in 0..<200 { for x in 0..<200 {
                for cx in [75.0, 125.0] {
                    let dx = Double(x) + 0.5 - cx, dy = Double(y) + 0.5 - 85
                    if open, abs(dx) < 9, abs(dy) < 2.5 { image.bytes[y * 200 + x] = dx * dx + dy * dy < 16 ? 40 : 230 }
                    // Shut: skin shading a little darker towards the lid's crease.
                    if !open, abs(dx) < 9, abs(dy) < 2.5 { image.bytes[y * 200 + x] = UInt8(150 - 12 * (1 - abs(dy) / 2.5)) }
                }
            } }
            return image
        }
        let flat = FaceAttributeReader.Options().flatEyeContrast
        for eye in [36, 42] {
            let open = EyeTexture.contrast(in: image(open: true), shape: shape, eye: eye)
            let shut = EyeTexture.contrast(in: image(open: false), shape: shape, eye: eye)
            #expect(open > 2 * flat, "open eye \(eye): \(open)")
            #expect(shut < flat, "shut eye \(eye): \(shut)")
        }
        // Lids the fit holds together hold no pixel: 0, not a division by zero.
        #expect(EyeTexture.contrast(in: image(open: true), shape: Self.shape(eyeRatio: 0), eye: 36) == 0)
    }

    @Test("eye aspect ratio is Soukupová and Čech's; mouth measures grow with lips apart and corners lifted")
    func measures() {
        let open = Self.shape(eyeRatio: 0.3), shut = Self.shape(eyeRatio: 0.05)
        #expect(abs(open.eyeAspectRatio - 0.3) < 1e-9)
        #expect(abs(shut.eyeAspectRatio - 0.05) < 1e-9)
        let serious = Self.shape(eyeRatio: 0.3), smiling = Self.shape(eyeRatio: 0.3, open: 12, lift: 6)
        #expect(serious.mouthOpen < 0.01 && smiling.mouthOpen > 0.1)
        #expect(abs(serious.cornerLift) < 0.01 && smiling.cornerLift > 0.05)
        #expect(abs(serious.yaw) < 1)
        let reader = FaceAttributeReader(options: FaceAttributeReader.Options())
        #expect(reader.smile(serious) < 0.5)
        // A smile widens the mouth and lifts its corners; a shout drops it open with the corners low.
        let broad = Self.shape(eyeRatio: 0.3, open: 12, lift: 6, wide: 1.3)
        let shout = Self.shape(eyeRatio: 0.3, open: 30, wide: 1.1)
        #expect(broad.upperLipLift > shout.upperLipLift + 0.1)
        #expect(reader.smile(broad) > 0.5, "\(reader.smile(broad))")
        #expect(reader.smile(shout) < 0.5, "\(reader.smile(shout))")
    }

    @Test("a missing model file is reported, and attributes fall back to the cascades")
    func missingModel() throws {
        var options = FaceAttributeReader.Options()
        options.shapeModelPath = "/nonexistent/shape_predictor_68_face_landmarks.dat"
        let problem = try #require(FaceAttributeReader.shapeModelProblem(options))
        #expect(problem.contains("did not load"))
        let reader = FaceAttributeReader(options: options)
        #expect(reader.shapeModel == nil)
        let grace = try FaceTestData.image("grace_hopper.jpg")
        var face = try #require(try YuNetDetectorTests.detector().detect(in: grace, gray: nil, limit: 1).first)
        face.smile = nil
        face.eyesClosed = nil
        let read = try reader.read(face, gray: ImageOps.gray(grace))
        #expect(read.smile != nil, "the smile cascade reads a smile without the model")
    }

    @Test("the 68 points land on the face: eyes near YuNet's eyes on every labelled face", .enabled(if: FaceShapeTests.hasModel, FaceShapeTests.noModel))
    func fitFollowsTheFace() throws {
        let model = try FaceShapeModel.shared(path: Self.modelPath)
        let detector = try YuNetDetectorTests.detector()
        var disagreements: [Double] = []
        for file in FaceTestData.labelledPhotos + ["grace_hopper.jpg"] {
            let image = try FaceTestData.image(file)
            let gray = try ImageOps.gray(image)
            for face in try detector.detect(in: image, gray: gray, limit: 50) where face.box.w >= 40 {
                let landmarks = try #require(face.landmarks)
                let crop = try #require(try UprightFaceCrop(gray: gray, landmarks: landmarks))
                let shape = try model.fit(crop)
                let toCrop = try #require(crop.toFrame.inverted)
                disagreements.append(try #require(shape.disagreement(with: landmarks, toCrop: toCrop)))
            }
        }
        print("68-point fit vs YuNet's five points, per interocular distance: \(disagreements.map { ($0 * 100).rounded() / 100 })")
        #expect(disagreements.count >= 8)
        #expect(disagreements.allSatisfy { $0 < 0.2 })
    }

    @Test("a blurred face gets neither smile nor eyes; the same face sharp gets both", .enabled(if: FaceShapeTests.hasModel, FaceShapeTests.noModel))
    func blurredIsNotJudged() throws {
        let detector = try YuNetDetectorTests.detector()
        let grace = try FaceTestData.image("grace_hopper.jpg")
        let sharp = try #require(try detector.detect(in: grace, gray: nil, limit: 1).first)
        #expect(sharp.smile != nil && sharp.eyesClosed == false)
        let blurred = grace.copy()
        try ImageOps.blur(blurred, kernel: 31, sigma: 9)
        // Read where the sharp face was (a blur this strong also loses the detection, or its person check).
        let reader = FaceAttributeReader()
        let again = try reader.read(sharp, gray: ImageOps.gray(grace))
        #expect(again.smile != nil && again.eyesClosed == false)
        let soft = try reader.read(sharp, gray: ImageOps.gray(blurred))
        #expect(soft.smile == nil && soft.eyesClosed == nil)
    }

    @Test("a face cut by the frame's edge gets neither smile nor eyes; moved back inside, both", .enabled(if: FaceShapeTests.hasModel, FaceShapeTests.noModel))
    func cutFaceIsNotJudged() throws {
        let detector = try YuNetDetectorTests.detector()
        let grace = try FaceTestData.image("grace_hopper.jpg")
        let whole = try #require(try detector.detect(in: grace, gray: nil, limit: 1).first)
        let reader = FaceAttributeReader()
        func moved(by dx: Double) throws -> FaceObservation {
            // The photo moved dx pixels on a black frame, and its face with it.
            let frame = ImageBuffer(width: grace.width, height: grace.height, channels: 3)
            memset(frame.bytes, 0, frame.stride * frame.height)
            try ImageOps.paste(grace, onto: frame, centerX: Double(grace.width) / 2 + dx, centerY: Double(grace.height) / 2,
                               scale: 1, clockwiseDegrees: 0)
            var face = whole
            face.box.x += dx
            face.landmarks = whole.landmarks.map { TrackGeometry.shifted($0, by: dx, 0) }
            return try reader.read(face, gray: ImageOps.gray(frame))
        }
        // The face's left third off the frame: its eyes are both still in it, but not the face.
        let cut = try moved(by: -(whole.box.x + whole.box.w / 3))
        #expect(cut.smile == nil && cut.eyesClosed == nil)
        let inside = try moved(by: -(whole.box.x - whole.box.w / 4))
        #expect(inside.smile != nil && inside.eyesClosed == false)
        #expect(FaceAttributeReader.isWhollyInFrame(PixelRect(x: -5, y: 0, w: 100, h: 100), width: 200, height: 200))
        #expect(!FaceAttributeReader.isWhollyInFrame(PixelRect(x: 0, y: 0, w: 100, h: 100), width: 80, height: 200))
    }

    @Test("dlib's dog photo gives no face (YuNet alone boxes one at 0.88)",
          .enabled(if: FileManager.default.fileExists(atPath: FaceShapeTests.labelledFaces + "/dlib_dogs.jpg"),
                   "dlib_dogs.jpg (dlib's examples/faces/dogs.jpg) is missing: run scripts/fetch-labelled-faces.sh"))
    func dogIsRefused() throws {
        let image = try ImageIO.read(path: Self.labelledFaces + "/dlib_dogs.jpg")
        var unchecked = YuNetDetector.Options.stillImage
        unchecked.checkPersons = false
        #expect(try !YuNetDetectorTests.detector(unchecked).detect(in: image, gray: nil, limit: 10).isEmpty,
                "YuNet alone takes the dog for a face")
        let detector = try YuNetDetectorTests.detector()
        #expect(try detector.detect(in: image, gray: nil, limit: 10).isEmpty)
        #expect(detector.lastPass.refused >= 1)
    }

    @Test("the person check's scan from two levels down dlib's pyramid finds each face's crop as the full scan does: same score, the box within a pixel")
    func personCheckSkipsLevelsWithoutChange() throws {
        let check = try PersonFaceCheck()
        var photos = FaceTestData.labelledPhotos.map { FaceTestData.faces + "/" + $0 }
        photos.append(Self.labelledFaces + "/dlib_dogs.jpg")
        var unchecked = YuNetDetector.Options.stillImage
        unchecked.checkPersons = false
        let detector = try YuNetDetectorTests.detector(unchecked)
        var compared = 0
        for path in photos where FileManager.default.fileExists(atPath: path) {
            let image = try ImageIO.read(path: path)
            let gray = try ImageOps.gray(image)
            for face in try detector.detect(in: image, gray: nil, limit: 50) {
                guard let landmarks = face.landmarks, let crop = try UprightFaceCrop(gray: gray, landmarks: landmarks)
                else { continue }
                let full = try check.strongest(in: crop.image, skippingLevels: 0)
                let skipped = try check.strongest(in: crop.image, skippingLevels: PersonFaceCheck.skippedLevels)
                // The full scan's levels 0 and 1 hold boxes of about 72 and 87 pixels; the crop's face is 128.
                if let full, full.box.width > 100 {
                    let same = try #require(skipped, "\(path): the face at \(face.box) lost")
                    #expect(abs(same.score - full.score) < 1e-9, "\(path): \(same.score) against \(full.score)")
                    // Mapped back from the level scanned first, then up the two skipped (each rounded to pixels).
                    #expect(abs(same.box.x - full.box.x) <= 1 && abs(same.box.y - full.box.y) <= 1
                            && abs(same.box.width - full.box.width) <= 1, "\(path): \(same.box) against \(full.box)")
                    compared += 1
                }
            }
        }
        #expect(compared >= 15, "the shared photos' faces were read (\(compared))")
        let noise = ImageBuffer(width: 192, height: 192, channels: 1)
        #expect(throws: OpenCVError.self) { try check.strongest(in: noise, skippingLevels: -1) }
    }
}
