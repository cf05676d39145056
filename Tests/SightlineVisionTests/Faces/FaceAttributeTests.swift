import Foundation
import Testing
@testable import SightlineVision
import SightlineTesting

/// Smile, closed eyes and yaw on the shared photos.
///
/// The photos carry no smile or eye labels, so these were labelled by eye
/// (by looking at the crops) and are written here by their faces.json box:
/// almost everyone in the dlib photos smiles; the young man at (41, 194) in
/// 2008_002079.jpg does not; the laughing girl at (145, 79) in
/// 2008_001009.jpg has her eyes squeezed shut; every other face large enough
/// to judge has its eyes open.
@Suite("Face attributes: smile, closed eyes, yaw")
struct FaceAttributeTests {
    /// Broad smiles, teeth showing: (photo, labelled box x, y).
    static let broadSmiles: [(String, Double, Double)] = [
        ("2007_007763.jpg", 194, 90), ("2007_007763.jpg", 158, 114), ("2007_007763.jpg", 178, 214),
        ("2007_007763.jpg", 294, 86), ("2008_002079.jpg", 406, 166), ("2008_002079.jpg", 439, 175),
        ("2008_001009.jpg", 145, 79), ("2008_001009.jpg", 125, 214), ("2008_001322.jpg", 232, 218),
        ("2008_001322.jpg", 344, 155),
    ]
    static let neutral = ("2008_002079.jpg", 41.0, 194.0)
    static let eyesShut = ("2008_001009.jpg", 145.0, 79.0)

    /// Detections on a photo paired with the label each lies on.
    static func labelled(_ file: String, detector: FaceDetector, image: ImageBuffer? = nil) throws
        -> [(label: FaceTestData.LabelledFace, face: FaceObservation)] {
        let labels = try #require(try FaceTestData.labels()[file])
        let faces = try detector.detect(in: image ?? FaceTestData.image(file), gray: nil, limit: 50)
        return faces.compactMap { face in FaceTestData.label(for: face, in: labels).map { ($0, face) } }
    }

    static func isLabel(_ label: FaceTestData.LabelledFace, _ file: String, _ key: (String, Double, Double)) -> Bool {
        file == key.0 && label.box.x == key.1 && label.box.y == key.2
    }

    @Test("smile: labelled broad smiles wide enough to judge read at least 0.5 but one, narrower ones none, the one unsmiling face under 0.3")
    func smile() throws {
        let detector = try YuNetDetectorTests.detector()
        let minWidth = FaceAttributeReader.Options().minFaceWidthForSmile
        var smiles: [Double] = [], tooSmall: [Double?] = [], neutral: Double?
        for file in FaceTestData.labelledPhotos {
            for (label, face) in try Self.labelled(file, detector: detector) {
                if Self.broadSmiles.contains(where: { Self.isLabel(label, file, $0) }) {
                    if face.box.w >= minWidth {
                        smiles.append(try #require(face.smile, "no smile read for \(file) \(label.box)"))
                    } else {
                        tooSmall.append(face.smile)
                    }
                }
                if Self.isLabel(label, file, Self.neutral) { neutral = face.smile }
            }
        }
        print("smile on broad smiles: \(smiles), on the unsmiling face: \(String(describing: neutral)); "
              + "\(tooSmall.count) narrower than \(minWidth) px")
        // The 37-pixel faces of 2007_007763.jpg are boxed 28-31 px wide by YuNet: too small to judge.
        #expect(smiles.count >= 5, "broad smiles judged: \(smiles.count) of \(Self.broadSmiles.count)")
        #expect(tooSmall.allSatisfy { $0 == nil }, "faces narrower than \(minWidth) px get no smile")
        // All but one may miss: a laugh in 2008_001009.jpg whose mouth is open so wide that its corners
        // sit under the upper lip, as a shout's do, read 0.33 with the curve fitted on all 89 labelled
        // faces; refitted on the faces not held out (scripts/fit-smile.py, issue 41) it reads 0.79.
        #expect(smiles.filter { $0 >= 0.5 }.count >= smiles.count - 1)
        #expect(try #require(neutral) < 0.3)
        #expect(smiles.allSatisfy { (0...1).contains($0) })
    }

    @Test("eyesClosed: the girl laughing with her eyes shut is closed, every other face judged is open")
    func eyesOnPhotos() throws {
        let detector = try YuNetDetectorTests.detector()
        var judged = 0, shut: Bool?
        for file in FaceTestData.labelledPhotos {
            for (label, face) in try Self.labelled(file, detector: detector) {
                guard let closed = face.eyesClosed else { continue }
                judged += 1
                if Self.isLabel(label, file, Self.eyesShut) { shut = closed } else {
                    #expect(!closed, "\(file) \(label.box) has open eyes")
                }
            }
        }
        let grace = try #require(try detector.detect(in: FaceTestData.image("grace_hopper.jpg"), gray: nil, limit: 1).first)
        #expect(grace.eyesClosed == false)
        #expect(judged >= 5, "faces large and frontal enough to judge: \(judged)")
        #expect(shut == true)
    }

    @Test("eyesClosed: covering both eyes with skin and a lid line closes them; covering one (a wink) does not")
    func eyesCovered() throws {
        let detector = try YuNetDetectorTests.detector()
        var cases: [(file: String, image: ImageBuffer, face: FaceObservation)] = []
        for file in FaceTestData.labelledPhotos + ["grace_hopper.jpg"] {
            let image = try FaceTestData.image(file)
            for face in try detector.detect(in: image, gray: nil, limit: 50) where face.eyesClosed == false {
                cases.append((file, image, face))
            }
        }
        #expect(cases.count >= 5)
        var closedBoth = 0, closedWink = 0
        for item in cases {
            let landmarks = try #require(item.face.landmarks)
            func reread(_ eyes: [PixelPoint]) throws -> FaceObservation? {
                let covered = EyeCover.covered(item.image, eyes: eyes,
                                               eyeDistance: hypot(landmarks.leftEye.x - landmarks.rightEye.x,
                                                                  landmarks.leftEye.y - landmarks.rightEye.y))
                return try detector.detect(in: covered, gray: nil, limit: 50)
                    .first { FaceGeometry.intersectionOverUnion($0.box, item.face.box) >= 0.5 }
            }
            if try reread([landmarks.rightEye, landmarks.leftEye])?.eyesClosed == true { closedBoth += 1 }
            if try reread([landmarks.rightEye])?.eyesClosed == true { closedWink += 1 }
        }
        print("covered eyes: both covered read closed on \(closedBoth)/\(cases.count), one covered on \(closedWink)/\(cases.count)")
        #expect(Double(closedBoth) >= 0.8 * Double(cases.count))
        #expect(Double(closedWink) <= 0.2 * Double(cases.count))
    }

    @Test("SteadyEyes: a new state is shown once two readings in a row agree; a stray one is not; an unjudged face starts afresh")
    func steadyEyes() {
        func shown(_ readings: [Bool?]) -> [Bool?] {
            var eyes = SteadyEyes()
            return readings.map { eyes.add($0) }
        }
        #expect(shown([false, true, false, true, true, true, false, false])
                == [false, false, false, false, true, true, true, false])
        #expect(shown([true, false, true]) == [true, true, true], "the first reading is shown as read")
        #expect(shown([false, true, nil, true]) == [false, false, nil, true], "nil clears what was pending")
        #expect(shown([false, nil, true, true]) == [false, nil, true, true])
    }

    @Test("live: a tracked face's eyes alternating between open and covered readings do not flicker; two covered readings close them")
    func eyesSteadyLive() throws {
        var options = YuNetDetector.Options()
        options.attributesEverySeconds = 1e-9 // read on every pass
        let live = try YuNetDetectorTests.detector(options)
        let still = try YuNetDetectorTests.detector()
        let open = try FaceTestData.image("grace_hopper.jpg")
        let face = try #require(try still.detect(in: open, gray: nil, limit: 1).first)
        let landmarks = try #require(face.landmarks)
        let covered = EyeCover.covered(open, eyes: [landmarks.rightEye, landmarks.leftEye],
                                       eyeDistance: landmarks.leftEye.distance(to: landmarks.rightEye))
        // The readings themselves: open reads open, covered reads closed.
        #expect(face.eyesClosed == false)
        #expect(try still.detect(in: covered, gray: nil, limit: 1).first?.eyesClosed == true)
        let pictures = [open, covered, open, covered, covered, covered, open, open]
        var reads = 0
        let shown = try pictures.map {
            let eyes = try live.detect(in: $0, gray: nil, limit: 1).first?.eyesClosed
            reads += live.lastPass.attributeReads
            return eyes
        }
        #expect(reads == pictures.count)
        #expect(shown == [false, false, false, false, true, true, true, false], "\(shown)")
    }

    @Test("the Haar fallback reads smile and eyes too, and leaves eyes it did not find unjudged")
    func haarAttributes() throws {
        let detector = try HaarFaceDetector(options: .stillImage)
        let grace = try #require(try detector.detect(in: FaceTestData.image("grace_hopper.jpg"), gray: nil, limit: 1).first)
        #expect(grace.landmarks != nil)
        #expect(grace.eyesClosed == false)
        #expect(try #require(grace.smile) >= 0 && grace.smile! <= 1)
        let faces = try detector.detect(in: FaceTestData.image("2008_001322.jpg"), gray: nil, limit: 10)
        #expect(faces.count >= 3)
        // Two broad smiles in 2008_001322.jpg; the man at (104, 162) smiles with his mouth
        // closed, which the mouth's shape reads low (docs/faces.md, Smile, closed eyes and animal faces).
        #expect(faces.filter { ($0.smile ?? 0) >= 0.5 }.count >= 2, "two broad smiles in 2008_001322.jpg")
        for photo in FaceTestData.labelledPhotos {
            for face in try detector.detect(in: FaceTestData.image(photo), gray: nil, limit: 50) where face.landmarks == nil {
                #expect(face.eyesClosed == nil)
            }
        }
    }

    @Test("yaw has the labels' sign on every clearly turned face (labelled |yaw| ≥ 15°) and follows them")
    func yawOnPhotos() throws {
        let detector = try YuNetDetectorTests.detector()
        var pairs: [(labelled: Double, measured: Double)] = []
        for file in FaceTestData.labelledPhotos {
            for (label, face) in try Self.labelled(file, detector: detector) {
                guard let truth = label.labelledYaw, abs(truth) >= 15, let yaw = face.yaw else { continue }
                pairs.append((truth, yaw))
            }
        }
        print("yaw (labelled, measured): \(pairs.map { "(\(Int($0.labelled)), \(Int($0.measured)))" })")
        #expect(pairs.count >= 9)
        #expect(pairs.filter { ($0.labelled > 0) == ($0.measured > 0) }.count == pairs.count)
        #expect(pairs.contains { $0.labelled > 0 } && pairs.contains { $0.labelled < 0 }, "both directions are tested")
        let meanError = pairs.map { abs($0.labelled - $0.measured) }.reduce(0, +) / Double(pairs.count)
        #expect(meanError <= 10)
    }
}

/// Paints closed eyes over open ones: each eye's ellipse filled with the
/// colour of the cheek below it, and a dark lid line across its lower half.
enum EyeCover {
    static func covered(_ image: ImageBuffer, eyes: [PixelPoint], eyeDistance e: Double) -> ImageBuffer {
        let out = image.copy()
        func pixel(_ x: Int, _ y: Int) -> UnsafeMutablePointer<UInt8>? {
            guard x >= 0, y >= 0, x < out.width, y < out.height else { return nil }
            return out.bytes + y * out.stride + x * out.channels
        }
        for eye in eyes {
            let rx = e * 0.28, ry = e * 0.16
            var skin = [Double](repeating: 0, count: image.channels), count = 0.0
            for y in Int(eye.y + e * 0.35)..<Int(eye.y + e * 0.5) {
                for x in Int(eye.x - rx)..<Int(eye.x + rx) {
                    guard let p = pixel(x, y) else { continue }
                    for c in 0..<image.channels { skin[c] += Double(p[c]) }
                    count += 1
                }
            }
            guard count > 0 else { continue }
            for y in Int(eye.y - ry - 1)...Int(eye.y + ry + 1) {
                for x in Int(eye.x - rx - 1)...Int(eye.x + rx + 1) {
                    let u = (Double(x) - eye.x) / rx, v = (Double(y) - eye.y) / ry
                    guard u * u + v * v <= 1, let p = pixel(x, y) else { continue }
                    for c in 0..<image.channels { p[c] = UInt8(skin[c] / count) }
                }
            }
            let half = max(0, Int(e / 60))
            for degrees in stride(from: 20.0, through: 160, by: 2) {
                let t = degrees * .pi / 180
                let cx = Int((eye.x + rx * cos(t)).rounded()), cy = Int((eye.y - 0.2 * ry + 0.6 * ry * sin(t)).rounded())
                for y in cy - half...cy + half {
                    for x in cx - half...cx + half {
                        guard let p = pixel(x, y) else { continue }
                        for c in 0..<image.channels { p[c] = [50, 40, 40][min(c, 2)] }
                    }
                }
            }
        }
        return out
    }
}


