import Foundation
import Testing
import SightlineVision

/// The shared face photos, their ground truth (faces.json) and the YuNet models.
package enum FaceTestData {
    /// ../shared/models, or SIGHTLINE_MODELS.
    package static let models: String = ProcessInfo.processInfo.environment["SIGHTLINE_MODELS"]
        ?? (TestPaths.repository as NSString).appendingPathComponent("../shared/models")
    package static var faces: String { TestPaths.testData + "/faces" }
    package static let labelledPhotos = ["2007_007763.jpg", "2008_001009.jpg", "2008_001322.jpg", "2008_002079.jpg"]
    package static let model320 = "face_detection_yunet_2023mar_320.onnx"
    package static let model640 = "face_detection_yunet_2023mar.onnx"

    package struct LabelledFace {
        package var box: PixelRect<Double>
        package var roll: Double
        /// The five labelled points (iBUG-68 eye centres, nose tip, mouth corners).
        package var landmarks: FaceLandmarks?

        /// Yaw the labelled points give by the same geometry the detectors use:
        /// the labels' own answer to which way the face is turned.
        package var labelledYaw: Double? { landmarks.flatMap(FaceGeometry.yaw) }
    }

    /// The labelled face a detection lies on (best IoU, at least `minIoU`).
    package static func label(for face: FaceObservation, in labels: [LabelledFace], minIoU: Double = 0.4) -> LabelledFace? {
        labels.max { FaceGeometry.intersectionOverUnion($0.box, face.box) < FaceGeometry.intersectionOverUnion($1.box, face.box) }
            .flatMap { FaceGeometry.intersectionOverUnion($0.box, face.box) >= minIoU ? $0 : nil }
    }

    /// Path of a model, or a failed requirement saying what is missing.
    package static func modelPath(_ name: String = model320) throws -> String {
        let path = models + "/" + name
        try #require(FileManager.default.fileExists(atPath: path),
                     "YuNet model \(path) is missing; set SIGHTLINE_MODELS to the directory holding \(name)")
        return path
    }

    package static func image(_ name: String) throws -> ImageBuffer {
        let path = faces + "/" + name
        try #require(FileManager.default.fileExists(atPath: path),
                     "test photo \(path) is missing; set SIGHTLINE_TEST_DATA to the shared testdata directory")
        return try ImageIO.read(path: path)
    }

    /// Labelled faces per photo from faces.json (the four dlib photos).
    package static func labels() throws -> [String: [LabelledFace]] {
        let path = faces + "/faces.json"
        let data = try #require(FileManager.default.contents(atPath: path),
                                "\(path) is missing; set SIGHTLINE_TEST_DATA to the shared testdata directory")
        let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let images = try #require(root["images"] as? [[String: Any]])
        var result: [String: [LabelledFace]] = [:]
        for image in images {
            guard let file = image["file"] as? String, let faces = image["faces"] as? [[String: Any]] else { continue }
            result[file] = faces.compactMap { face in
                guard let box = face["box"] as? [Double], box.count == 4, let roll = face["roll"] as? Double else { return nil }
                return LabelledFace(box: PixelRect(x: box[0], y: box[1], w: box[2], h: box[3]), roll: roll,
                                    landmarks: (face["landmarks"] as? [String: [Double]]).flatMap(landmarks))
            }
        }
        return result
    }

    /// faces.json names points from the image's side: its left eye is the subject's right.
    package static func landmarks(_ points: [String: [Double]]) -> FaceLandmarks? {
        func point(_ key: String) -> PixelPoint? {
            points[key].flatMap { $0.count == 2 ? PixelPoint(x: $0[0], y: $0[1]) : nil }
        }
        guard let right = point("eyeImageLeft"), let left = point("eyeImageRight") else { return nil }
        return FaceLandmarks(rightEye: right, leftEye: left, nose: point("nose"),
                             mouthRight: point("mouthImageLeft"), mouthLeft: point("mouthImageRight"))
    }

    package struct Evaluation {
        package var labelled = 0
        package var found = 0
        package var falsePositives = 0
        /// |roll error| per matched face.
        package var rollErrors: [Double] = []
    }

    /// Matches each detection to the best unmatched label at IoU ≥ 0.4.
    package static func evaluate(_ detector: FaceDetector, minIoU: Double = 0.4) throws -> Evaluation {
        let labels = try labels()
        var result = Evaluation()
        for file in labelledPhotos {
            let truth = try #require(labels[file], "faces.json has no faces for \(file)")
            let image = try image(file)
            let faces = try detector.detect(in: image, gray: nil, limit: 50)
            result.labelled += truth.count
            var used = Set<Int>()
            for face in faces {
                let best = truth.indices.filter { !used.contains($0) }
                    .max { FaceGeometry.intersectionOverUnion(truth[$0].box, face.box) < FaceGeometry.intersectionOverUnion(truth[$1].box, face.box) }
                if let best, FaceGeometry.intersectionOverUnion(truth[best].box, face.box) >= minIoU {
                    used.insert(best)
                    result.found += 1
                    if let roll = face.roll { result.rollErrors.append(abs(FaceGeometry.normalizedDegrees(roll - truth[best].roll))) }
                } else {
                    result.falsePositives += 1
                }
            }
        }
        return result
    }

    package static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return .infinity }
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
}
