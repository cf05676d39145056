import Foundation
import Testing
@testable import SightlineVision
import SightlineTesting

@Suite("YuNet on ONNX Runtime and on OpenCV's dnn")
struct YuNetRuntimeTests {
    static let onnxRuntimeInstalled = (try? ONNXRuntimeSession.availability.get()) != nil
    static let skipMessage: Comment = """
        ONNX Runtime is not installed (scripts/install-onnxruntime.sh puts it in /usr/local/lib): \
        faces run on OpenCV's dnn, and there is nothing to compare
        """

    @Test("the shape-free model declares no input size, and a file that is no model gives nil")
    func shapeFreeModel() throws {
        let path = try FaceTestData.modelPath()
        let original = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let freed = try #require(ONNXShapeFreeModel.rewritten(original))
        #expect(ONNXInputShape.read(model: original) == [1, 3, 320, 320])
        #expect(ONNXInputShape.read(model: freed) == nil)
        // Only declarations go: the weights (most of the file) stay.
        #expect(freed.count < original.count && freed.count > original.count * 9 / 10)
        #expect(ONNXShapeFreeModel.rewritten(Array("not a model".utf8)) == nil)
        #expect(ONNXShapeFreeModel.rewritten([]) == nil)
    }

    @Test("faces.runtime opencv runs on OpenCV's dnn")
    func openCVChoice() throws {
        var options = YuNetDetector.Options.stillImage
        options.runtime = .opencv
        let detector = try YuNetDetector(modelPath: FaceTestData.modelPath(), options: options)
        #expect(detector.runtimeName == "opencv")
        #expect(detector.runtimeNote == nil)
    }

    @Test("both runtimes find the same faces, boxes, scores and landmarks on the shared photos",
          .enabled(if: onnxRuntimeInstalled, skipMessage))
    func sameFaces() throws {
        var options = YuNetDetector.Options.stillImage
        options.runtime = .opencv
        let openCV = try YuNetDetector(modelPath: FaceTestData.modelPath(), options: options)
        options.runtime = .onnxruntime
        let onnx = try YuNetDetector(modelPath: FaceTestData.modelPath(), options: options)
        #expect(onnx.runtimeName.hasPrefix("onnxruntime 1."))
        var compared = 0
        for photo in FaceTestData.labelledPhotos + ["grace_hopper.jpg", "messi5.jpg"] {
            let image = try FaceTestData.image(photo)
            let expected = try openCV.detect(in: image, gray: nil, limit: 30).sorted { $0.box.x < $1.box.x }
            let found = try onnx.detect(in: image, gray: nil, limit: 30).sorted { $0.box.x < $1.box.x }
            #expect(found.count == expected.count, "\(photo): \(found.count) faces against \(expected.count)")
            for (a, b) in zip(found, expected) {
                #expect(a.box.intersectionOverUnion(b.box) >= 0.97, "\(photo): \(a.box) against \(b.box)")
                #expect(abs(a.score - b.score) <= 0.02, "\(photo): score \(a.score) against \(b.score)")
                if let l = a.landmarks, let m = b.landmarks {
                    let shift = max(hypot(l.rightEye.x - m.rightEye.x, l.rightEye.y - m.rightEye.y),
                                    hypot(l.leftEye.x - m.leftEye.x, l.leftEye.y - m.leftEye.y))
                    #expect(shift <= 1.5, "\(photo): eyes \(shift) px apart")
                }
                compared += 1
            }
        }
        #expect(compared >= 20)
    }
}
