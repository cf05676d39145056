import Foundation
import Testing
@testable import SightlineVision
import SightlineTesting

@Suite("Haar fallback face detection")
struct HaarFaceDetectorTests {
    static func detector(_ options: HaarFaceDetector.Options = .stillImage) throws -> HaarFaceDetector {
        let path = options.cascadeDirectory + "/" + options.faceCascade
        try #require(FileManager.default.fileExists(atPath: path),
                     "\(path) is missing; install Debian's opencv-data package")
        return try HaarFaceDetector(options: options)
    }

    @Test("finds at least 12 of the 18 labelled faces")
    func labelledFaces() throws {
        let result = try FaceTestData.evaluate(Self.detector())
        print("Haar dlib photos: found \(result.found)/\(result.labelled), false positives \(result.falsePositives)")
        #expect(result.found >= 12)
    }

    @Test("finds Grace Hopper's face with both eyes, roll near zero")
    func graceHopper() throws {
        let faces = try Self.detector().detect(in: FaceTestData.image("grace_hopper.jpg"), gray: nil, limit: 10)
        #expect(faces.count == 1)
        let face = try #require(faces.first)
        #expect(face.yaw == nil, "Haar has no nose landmark, so yaw stays unknown")
        let landmarks = try #require(face.landmarks, "no eyes found")
        #expect(landmarks.rightEye.x < landmarks.leftEye.x)
        #expect(abs(try #require(face.roll)) < 8)
    }

    @Test("a missing cascade directory is an error naming the package")
    func missingCascade() {
        var options = HaarFaceDetector.Options()
        options.cascadeDirectory = "/nonexistent"
        #expect(throws: FaceDetectorError.self) { try HaarFaceDetector(options: options) }
        #expect("\(FaceDetectorError.cascadeMissing(path: "/x.xml"))".contains("opencv-data"))
    }
}
