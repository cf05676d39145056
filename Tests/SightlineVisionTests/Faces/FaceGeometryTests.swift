import Foundation
import Logging
import Testing
@testable import SightlineVision
import SightlineTesting

@Suite("Face geometry, decoding and wire conversion")
struct FaceGeometryTests {
    @Test("roll is clockwise positive in image coordinates, 0 for an upright face")
    func rollConvention() {
        let right = PixelPoint(x: 100, y: 100)
        #expect(abs(FaceGeometry.roll(rightEye: right, leftEye: PixelPoint(x: 140, y: 100))) < 1e-9)
        // The image-right eye lower (y down): the face is turned clockwise.
        #expect(abs(FaceGeometry.roll(rightEye: right, leftEye: PixelPoint(x: 140, y: 140)) - 45) < 1e-9)
        #expect(abs(FaceGeometry.roll(rightEye: right, leftEye: PixelPoint(x: 140, y: 60)) + 45) < 1e-9)
        // Upside down: 180, never -180.
        #expect(FaceGeometry.roll(rightEye: right, leftEye: PixelPoint(x: 60, y: 100)) == 180)
    }

    @Test("yaw is positive when the nose sits towards the image's right, clamped to ±90")
    func yawSign() throws {
        func face(noseX: Double) -> FaceLandmarks {
            FaceLandmarks(rightEye: PixelPoint(x: 100, y: 100), leftEye: PixelPoint(x: 140, y: 100),
                          nose: PixelPoint(x: noseX, y: 120), mouthRight: PixelPoint(x: 105, y: 140),
                          mouthLeft: PixelPoint(x: 135, y: 140))
        }
        #expect(abs(try #require(FaceGeometry.yaw(face(noseX: 120)))) < 1e-9)
        #expect(try #require(FaceGeometry.yaw(face(noseX: 130))) > 10)
        #expect(try #require(FaceGeometry.yaw(face(noseX: 110))) < -10)
        #expect(try #require(FaceGeometry.yaw(face(noseX: 10_000))) <= 90)
        #expect(FaceGeometry.yaw(FaceLandmarks(rightEye: PixelPoint(x: 1, y: 1), leftEye: PixelPoint(x: 2, y: 1))) == nil)
    }

    @Test("non-maximum suppression keeps the best of overlapping faces, up to the limit")
    func suppression() {
        let a = FaceObservation(box: PixelRect(x: 0, y: 0, w: 10, h: 10), score: 0.9)
        let b = FaceObservation(box: PixelRect(x: 1, y: 1, w: 10, h: 10), score: 0.8)
        let c = FaceObservation(box: PixelRect(x: 50, y: 50, w: 10, h: 10), score: 0.7)
        #expect(FaceGeometry.suppressed([b, c, a], iouThreshold: 0.3, limit: 10) == [a, c])
        #expect(FaceGeometry.suppressed([b, c, a], iouThreshold: 0.3, limit: 1) == [a])
    }

    @Test("an affine turn maps points and its inverse maps them back")
    func affine() throws {
        let centre = PixelPoint(x: 50, y: 40)
        let turn = AffineTransform.rotation(about: centre, clockwiseDegrees: 90, scale: 2, to: PixelPoint(x: 0, y: 0))
        let p = turn.apply(PixelPoint(x: 60, y: 40))  // 10 px right of the centre
        #expect(abs(p.x) < 1e-9 && abs(p.y - 20) < 1e-9, "clockwise 90° sends right to down, scaled by 2")
        let back = try #require(turn.inverted).apply(p)
        #expect(abs(back.x - 60) < 1e-9 && abs(back.y - 40) < 1e-9)
    }

    @Test("the decoder turns one hot anchor into a face in input pixels")
    func decoder() {
        let decoder = YuNetDecoder(inputSize: 64, scoreThreshold: 0.5)
        var outputs = decoder.outputCapacities.map { [Float](repeating: 0, count: $0) }
        // Stride 16 (outputs 4...7): a 4x4 grid; anchor at row 1, column 2 (index 6).
        let index = 6
        outputs[4][index] = 0.81; outputs[5][index] = 1.0
        outputs[6].replaceSubrange(index * 4..<index * 4 + 4, with: [0.5, 0.5, Float(log(2.0)), 0])
        outputs[7].replaceSubrange(index * 10..<index * 10 + 10, with: [0, 0, 1, 0, 0.5, 0.5, 0, 1, 1, 1])
        let faces = outputs.map { Array($0) }.withUnsafeBufferPointers { decoder.decode($0) }
        #expect(faces.count == 1)
        let face = faces[0]
        #expect(abs(face.score - 0.9) < 1e-6)
        // centre (2.5, 1.5) * 16 = (40, 24), size 32 x 16.
        #expect(abs(face.box.x - 24) < 1e-6 && abs(face.box.y - 16) < 1e-6)
        #expect(abs(face.box.w - 32) < 1e-6 && abs(face.box.h - 16) < 1e-6)
        #expect(face.landmarks?.rightEye == PixelPoint(x: 32, y: 16))
        #expect(face.landmarks?.leftEye == PixelPoint(x: 48, y: 16))
        #expect(face.landmarks?.mouthLeft == PixelPoint(x: 48, y: 32))
    }

    @Test("a wide input's anchors are read row by row of its own width")
    func decoderOnAWideInput() {
        let decoder = YuNetDecoder(inputWidth: 96, inputHeight: 64, scoreThreshold: 0.5)
        #expect(decoder.outputCapacities[0] == 12 * 8 && decoder.outputCapacities[4] == 6 * 4)
        var outputs = decoder.outputCapacities.map { [Float](repeating: 0, count: $0) }
        // Stride 16: a 6x4 grid; anchor at row 2, column 5 (index 17).
        let index = 17
        outputs[4][index] = 1; outputs[5][index] = 1
        outputs[6].replaceSubrange(index * 4..<index * 4 + 4, with: [0.5, 0.5, 0, 0])
        let faces = outputs.map { Array($0) }.withUnsafeBufferPointers { decoder.decode($0) }
        #expect(faces.count == 1)
        // centre (5.5, 2.5) * 16 = (88, 40), size 16 x 16.
        #expect(abs(faces[0].box.x - 80) < 1e-6 && abs(faces[0].box.y - 32) < 1e-6)
    }

    @Test("a letterbox pads the short side only to a multiple of 32 and maps back to the frame")
    func letterboxShapes() {
        let wide = Letterbox(regionX: 0, regionY: 0, regionWidth: 640, regionHeight: 480, inputSize: 320)
        #expect(wide.inputWidth == 320 && wide.inputHeight == 256 && wide.scaledHeight == 240)
        let tall = Letterbox(regionX: 100, regionY: 50, regionWidth: 360, regionHeight: 640, inputSize: 320)
        #expect(tall.inputWidth == 192 && tall.inputHeight == 320)
        let p = tall.toFrame.apply(PixelPoint(x: 90, y: 160))
        #expect(abs(p.x - 280) < 1e-9 && abs(p.y - 370) < 1e-9)
        let square = Letterbox(regionX: 0, regionY: 0, regionWidth: 100, regionHeight: 100, inputSize: 320)
        #expect(square.inputWidth == 320 && square.inputHeight == 320)
    }

    @Test("the ONNX reader finds the models' fixed input sizes")
    func onnxInput() throws {
        let small = try FaceTestData.modelPath(FaceTestData.model320)
        #expect(ONNXInputShape.read(path: small) == [1, 3, 320, 320])
        #expect(ONNXInputShape.squareInputSize(path: try FaceTestData.modelPath(FaceTestData.model640)) == 640)
        #expect(ONNXInputShape.read(path: TestPaths.demoTemplate) == nil)
    }

    @Test("a face becomes a normalized face detection with named landmarks")
    func wire() throws {
        let face = FaceObservation(
            box: PixelRect(x: 64, y: 48, w: 128, h: 96), score: 0.912345,
            landmarks: FaceLandmarks(rightEye: PixelPoint(x: 100, y: 80), leftEye: PixelPoint(x: 160, y: 80),
                                     nose: PixelPoint(x: 130, y: 100)),
            roll: -4.54, yaw: 12.04, smile: 0.5)
        let detection = face.detection(frameWidth: 640, frameHeight: 480)
        #expect(detection.kind == .face && detection.id == nil && detection.name == nil)
        #expect(detection.box == NormalizedBox(x: 0.1, y: 0.1, w: 0.2, h: 0.2))
        #expect(detection.landmarks?["rightEye"] == [0.1563, 0.1667])
        #expect(detection.landmarks?["nose"] == [0.2031, 0.2083])
        #expect(detection.landmarks?["mouthLeft"] == nil)
        #expect(detection.roll == -4.5 && detection.yaw == 12.0 && detection.score == 0.9123)
        #expect(detection.eyesClosed == nil)
        let json = String(decoding: try JSONEncoder().encode(detection), as: UTF8.self)
        #expect(!json.contains("eyesClosed") && !json.contains("mouthLeft"))
    }

    @Test("model path: flag, then SIGHTLINE_FACE_MODEL, then config; empty is unset")
    func modelPath() {
        let env = ["SIGHTLINE_FACE_MODEL": "/env.onnx"]
        #expect(FaceDetectorFactory.resolveModelPath(flag: "/flag.onnx", environment: env, configured: "/c") == "/flag.onnx")
        #expect(FaceDetectorFactory.resolveModelPath(flag: nil, environment: env, configured: "/c") == "/env.onnx")
        #expect(FaceDetectorFactory.resolveModelPath(flag: "", environment: [:], configured: "/c") == "/c")
        #expect(FaceDetectorFactory.resolveModelPath(flag: nil, environment: [:], configured: nil, bundled: nil) == nil)
        // Nothing set: the shipped model; "haar" anywhere asks for no model.
        #expect(FaceDetectorFactory.resolveModelPath(flag: nil, environment: [:], configured: nil, bundled: "/m.onnx")
            == "/m.onnx")
        #expect(FaceDetectorFactory.resolveModelPath(flag: nil, environment: [:], configured: "HAAR", bundled: "/m.onnx")
            == nil)
        #expect(FaceDetectorFactory.resolveModelPath(flag: "haar", environment: env, configured: "/c", bundled: "/m.onnx")
            == nil)
    }

    @Test("the factory falls back to Haar when the model does not load")
    func factoryFallback() throws {
        let logger = Logger(label: "test")
        try #require(FileManager.default.fileExists(atPath: "/usr/share/opencv4/haarcascades/haarcascade_frontalface_alt2.xml"),
                     "Haar cascades missing; install opencv-data")
        #expect(try FaceDetectorFactory.make(modelPath: "/nonexistent.onnx", logger: logger).name == "haar")
        #expect(try FaceDetectorFactory.make(modelPath: nil, logger: logger).name == "haar")
        let model = try FaceTestData.modelPath()
        #expect(try FaceDetectorFactory.make(modelPath: model, logger: logger).name == "yunet-320")
        #expect(try FaceDetectorFactory.choose(modelPath: nil, logger: logger).fallbackReason != nil)
        #expect(try FaceDetectorFactory.choose(modelPath: model, logger: logger).fallbackReason == nil)
    }

    @Test("the shipped YuNet-320 model is found from the source tree and loads")
    func bundledModel() throws {
        let path = try #require(FaceDetectorFactory.locateBundledModel(), "models/ lacks the shipped model")
        #expect(try FaceDetectorFactory.make(modelPath: path, logger: Logger(label: "test")).name == "yunet-320")
    }
}

extension Array where Element == [Float] {
    func withUnsafeBufferPointers<R>(_ body: ([UnsafeBufferPointer<Float>]) -> R) -> R {
        func step(_ index: Int, _ collected: [UnsafeBufferPointer<Float>]) -> R {
            guard index < count else { return body(collected) }
            return self[index].withUnsafeBufferPointer { step(index + 1, collected + [$0]) }
        }
        return step(0, [])
    }
}
