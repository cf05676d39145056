import Foundation

/// Turns YuNet's 12 raw outputs into faces in the network's input pixels.
///
/// The 2023mar model has, per stride s in 8/16/32, a grid of (S/s)² anchor
/// points (row-major) with `cls_s` and `obj_s` (one float each), `bbox_s`
/// (dx, dy, log w, log h in stride units) and `kps_s` (five x, y pairs in
/// stride units, relative to the anchor): right eye, left eye, nose tip,
/// right and left mouth corner, from the subject's point of view.
/// score = sqrt(clamp(cls) * clamp(obj)). Pure Swift, so it is tested without OpenCV.
public struct YuNetDecoder: Sendable {
    public static let strides = [8, 16, 32]
    public static let boxValues = 4
    public static let landmarkValues = 10

    /// Output names in the order `outputs` are passed to `decode`:
    /// cls, obj, bbox, kps for stride 8, then 16, then 32.
    public static let outputNames: [String] = strides.flatMap { ["cls_\($0)", "obj_\($0)", "bbox_\($0)", "kps_\($0)"] }

    /// The input's width and height (multiples of 32; the network is fully
    /// convolutional, so a letterboxed frame need not be padded to a square).
    public var inputWidth: Int
    public var inputHeight: Int
    public var scoreThreshold: Double

    public init(inputWidth: Int, inputHeight: Int, scoreThreshold: Double) {
        self.inputWidth = inputWidth
        self.inputHeight = inputHeight
        self.scoreThreshold = scoreThreshold
    }

    public init(inputSize: Int, scoreThreshold: Double) {
        self.init(inputWidth: inputSize, inputHeight: inputSize, scoreThreshold: scoreThreshold)
    }

    /// Float count of each output (same order as `outputNames`).
    public var outputCapacities: [Int] {
        Self.strides.flatMap { stride -> [Int] in
            let cells = cellCount(stride)
            return [cells, cells, cells * Self.boxValues, cells * Self.landmarkValues]
        }
    }

    func cellCount(_ stride: Int) -> Int { (inputWidth / stride) * (inputHeight / stride) }

    /// Faces above the threshold, before NMS, in input pixels.
    public func decode(_ outputs: [UnsafeBufferPointer<Float>]) -> [FaceObservation] {
        precondition(outputs.count == Self.outputNames.count)
        var faces: [FaceObservation] = []
        for (level, stride) in Self.strides.enumerated() {
            let base = level * 4
            faces += decodeLevel(stride: stride, cls: outputs[base], obj: outputs[base + 1],
                                 bbox: outputs[base + 2], kps: outputs[base + 3])
        }
        return faces
    }

    private func decodeLevel(stride: Int, cls: UnsafeBufferPointer<Float>, obj: UnsafeBufferPointer<Float>,
                             bbox: UnsafeBufferPointer<Float>, kps: UnsafeBufferPointer<Float>) -> [FaceObservation] {
        let columns = inputWidth / stride
        let cells = min(cellCount(stride), cls.count, obj.count, bbox.count / Self.boxValues,
                        kps.count / Self.landmarkValues)
        var faces: [FaceObservation] = []
        let s = Double(stride)
        for index in 0..<cells {
            let score = (clamp01(cls[index]) * clamp01(obj[index])).squareRoot()
            guard score >= scoreThreshold else { continue }
            let column = Double(index % columns), row = Double(index / columns)
            let b = index * Self.boxValues
            let cx = (column + Double(bbox[b])) * s, cy = (row + Double(bbox[b + 1])) * s
            let w = exp(Double(bbox[b + 2])) * s, h = exp(Double(bbox[b + 3])) * s
            let k = index * Self.landmarkValues
            func point(_ n: Int) -> PixelPoint {
                PixelPoint(x: (Double(kps[k + 2 * n]) + column) * s, y: (Double(kps[k + 2 * n + 1]) + row) * s)
            }
            let landmarks = FaceLandmarks(rightEye: point(0), leftEye: point(1), nose: point(2),
                                          mouthRight: point(3), mouthLeft: point(4))
            faces.append(FaceObservation(box: PixelRect(x: cx - w / 2, y: cy - h / 2, w: w, h: h), score: score, landmarks: landmarks))
        }
        return faces
    }

    private func clamp01(_ value: Float) -> Double { Double(min(1, max(0, value))) }
}
