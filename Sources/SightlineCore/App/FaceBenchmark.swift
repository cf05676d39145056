import Foundation
import SightlineVision
import SightlineSupport
import SightlinePipeline
import SightlineHTTP
import SightlineEvents

/// `sightline bench --faces FILE`: times each face detector, configured as
/// the live server configures it, on frames of a photo or video fitted into
/// the bench's frame size (letterboxed, so faces keep their shape).
///
/// Detectors run one after another on the calling thread, as the server's
/// detection worker runs them; the figures are per call of `detect`:
/// - `yunet-320`: letterbox, forward pass, decoding and NMS alone; the
///   attribute reader (smile, eyes) is timed separately per face on its faces;
/// - `yunet-320+refine`: as the server runs it by default (second landmark
///   pass and attributes);
/// - `haar`: as the server runs it (face pass, eye search, attributes).
public struct FaceBenchmark {
    public struct DetectorTiming: Codable, Sendable {
        public var detector: String
        /// What ran YuNet's network ("onnxruntime 1.32.0", "opencv"); nil for Haar.
        public var runtime: String?
        public var frames: Int
        public var msPerFrame: PipelineBenchmark.StageTiming
        /// Detections per second one core sustains (1000 / mean ms).
        public var detectionsPerSecond: Double
        public var facesPerFrame: Double
        /// `FaceAttributeReader.read` alone, per face (crop, smile, eyes).
        public var attributesMsPerFace: PipelineBenchmark.StageTiming?
        /// Its steps per face, and the person check's (dlib's model
        /// present): `uprightCrop`, `fit68` (dlib's shape predictor),
        /// `sharpness`, `cascadeEyes` (the eye cascades' second look, run
        /// only for eyes neither shut nor surely open), `personCheck` (the
        /// HOG second look, run on faces new to the tracker).
        public var stepsMsPerFace: [String: PipelineBenchmark.StageTiming]?
        /// YuNet's pass part by part (`FacePassProfile`, the monotonic clock
        /// around each part inside the detector), per frame: `detect`
        /// (letterbox, forward pass, decoding and NMS), `crops` (the second
        /// landmark pass's crops), `personCheck`, `attributes`, and
        /// `uprightCrops` (the upright crops within the last two). Recognition
        /// is the pipeline's (FaceService), not the detector's: not timed here.
        public var passMsPerFrame: [String: PipelineBenchmark.StageTiming]?
        /// What YuNet's passes did, per frame on average: `rereads` (faces a
        /// crop read), `personChecks`, `refused`, `attributeReads`.
        public var passCountsPerFrame: [String: Double]?
    }

    public struct Report: Codable, Sendable {
        public var input: String
        public var width: Int
        public var height: Int
        public var detectors: [DetectorTiming]
    }

    public let inputPath: String
    public let width: Int
    public let height: Int
    public let frames: Int
    /// YuNet model; nil times Haar alone.
    public let modelPath: String?
    /// What runs YuNet's network (`faces.runtime`).
    public let runtime: YuNetRuntime

    public init(inputPath: String, width: Int, height: Int, frames: Int, modelPath: String?,
                runtime: YuNetRuntime = .auto) {
        self.inputPath = inputPath
        self.width = width
        self.height = height
        self.frames = frames
        self.modelPath = modelPath
        self.runtime = runtime
    }

    public func run() throws -> Report {
        let images = try loadFrames()
        var detectors: [FaceDetector] = []
        if let modelPath {
            var plain = YuNetDetector.Options()
            plain.attributes = nil
            plain.checkPersons = false
            plain.runtime = runtime
            detectors.append(try YuNetDetector(modelPath: modelPath, options: plain))
            var refined = YuNetDetector.Options()
            refined.refineLandmarks = true
            refined.runtime = runtime
            detectors.append(try YuNetDetector(modelPath: modelPath, options: refined))
        }
        detectors.append(try HaarFaceDetector())
        var timings: [DetectorTiming] = []
        for (index, detector) in detectors.enumerated() {
            var name = detector.name
            if let yunet = detector as? YuNetDetector, yunet.options.refineLandmarks { name += "+refine" }
            timings.append(try time(detector, name: name, images: images, withAttributes: index == 0 && modelPath != nil))
        }
        return Report(input: inputPath, width: width, height: height, detectors: timings)
    }

    private func time(_ detector: FaceDetector, name: String, images: [ImageBuffer], withAttributes: Bool) throws
        -> DetectorTiming {
        let reader = FaceAttributeReader()
        var samples: [Double] = [], attributeSamples: [Double] = [], faces = 0
        var steps: [String: [Double]] = [:]
        var parts: [String: [Double]] = [:], counts: [String: Int] = [:]
        let check = withAttributes && reader.shapeModel != nil ? try PersonFaceCheck() : nil
        func timed<T>(_ step: String, _ body: () throws -> T) rethrows -> T {
            let t0 = MonotonicClock.nanos()
            let result = try body()
            steps[step, default: []].append(Double(MonotonicClock.nanos() - t0) / 1e6)
            return result
        }
        for image in images {
            // The server makes the gray frame in its convert stage, not on the detector's thread.
            let gray = try ImageOps.gray(image)
            let t0 = MonotonicClock.nanos()
            let found = try detector.detect(in: image, gray: gray, limit: 10)
            samples.append(Double(MonotonicClock.nanos() - t0) / 1e6)
            faces += found.count
            if let pass = detector.lastPassProfile {
                for (part, seconds) in [("detect", pass.detectSeconds), ("crops", pass.cropSeconds),
                                        ("personCheck", pass.personCheckSeconds), ("attributes", pass.attributeSeconds),
                                        ("uprightCrops", pass.uprightCropSeconds)] {
                    parts[part, default: []].append(seconds * 1000)
                }
                for (name, count) in [("rereads", pass.rereads), ("personChecks", pass.personChecks),
                                      ("refused", pass.refused), ("attributeReads", pass.attributeReads)] {
                    counts[name, default: 0] += count
                }
            }
            guard withAttributes else { continue }
            for face in found {
                let t1 = MonotonicClock.nanos()
                _ = try reader.read(face, gray: gray)
                attributeSamples.append(Double(MonotonicClock.nanos() - t1) / 1e6)
                guard let check, let model = reader.shapeModel, let landmarks = face.landmarks,
                      let crop = try timed("uprightCrop", { try UprightFaceCrop(gray: gray, landmarks: landmarks) })
                else { continue }
                let shape = try timed("fit68") { try model.fit(crop) }
                _ = timed("sharpness") { crop.sharpness() }
                _ = timed("eyeTexture") { EyeTexture.betterEye(in: crop, shape: shape) }
                _ = try timed("cascadeEyes") { try reader.openEyeConfidence(in: crop, eyes: landmarks) }
                _ = try timed("personCheck") { try check.score(crop) }
            }
        }
        let timing = PipelineBenchmark.timing(samples)
        return DetectorTiming(detector: name, runtime: (detector as? YuNetDetector)?.runtimeName,
                              frames: images.count, msPerFrame: timing,
                              detectionsPerSecond: (1000 / max(timing.mean, 1e-6)).rounded(toPlaces: 1),
                              facesPerFrame: (Double(faces) / Double(max(1, images.count))).rounded(toPlaces: 2),
                              attributesMsPerFace: attributeSamples.isEmpty ? nil : PipelineBenchmark.timing(attributeSamples),
                              stepsMsPerFace: steps.isEmpty ? nil : steps.mapValues(PipelineBenchmark.timing),
                              passMsPerFrame: parts.isEmpty ? nil : parts.mapValues(PipelineBenchmark.timing),
                              passCountsPerFrame: counts.isEmpty ? nil
                                : counts.mapValues { (Double($0) / Double(max(1, images.count))).rounded(toPlaces: 2) })
    }

    /// `frames` frames of the input (a still repeats), each letterboxed into width x height.
    private func loadFrames() throws -> [ImageBuffer] {
        let (source, _) = try SourceFactory().make(.file(path: inputPath, pace: .max, fps: nil))
        _ = try source.open()
        defer { source.close() }
        return try (0..<frames).map { _ in try letterboxed(source.nextImage().image) }
    }

    private func letterboxed(_ image: ImageBuffer) throws -> ImageBuffer {
        let canvas = ImageBuffer(width: width, height: height, channels: 3)
        let scale = min(Double(width) / Double(image.width), Double(height) / Double(image.height))
        let w = max(1, Int(Double(image.width) * scale)), h = max(1, Int(Double(image.height) * scale))
        try ImageOps.resize(image.cView, into: canvas.cView(x: (width - w) / 2, y: (height - h) / 2, width: w, height: h),
                            interpolation: .area)
        return canvas
    }
}
