import CSightlineOpenCV
import Foundation

/// One cv::CascadeClassifier behind the shim.
/// Belongs to the thread of the detector that owns it (see FaceDetector).
final class HaarCascade {
    /// Most rectangles one detectMultiScale call reports.
    static let maxHits = 256

    private let handle: OpaquePointer
    private var rects = [slcv_rect](repeating: slcv_rect(), count: maxHits)

    init(path: String) throws {
        guard FileManager.default.isReadableFile(atPath: path) else { throw FaceDetectorError.cascadeMissing(path: path) }
        var cascade: OpaquePointer?
        try OpenCVError.check { slcv_cascade_load(path, &cascade, $0) }
        guard let cascade else { throw FaceDetectorError.cascadeMissing(path: path) }
        handle = cascade
    }

    deinit { slcv_cascade_release(handle) }

    struct Parameters {
        var scaleFactor: Double
        var minNeighbors: Int
        var minSize: Int
        var maxSize: Int = 0
    }

    /// Hits in the gray view's pixels.
    func detect(_ gray: slcv_image, _ p: Parameters) throws -> [PixelRect<Int>] {
        var found: Int32 = 0
        _ = try rects.withUnsafeMutableBufferPointer { buffer in
            try OpenCVError.check {
                slcv_cascade_detect(handle, gray, p.scaleFactor, Int32(p.minNeighbors), Int32(p.minSize),
                                    Int32(p.maxSize), buffer.baseAddress, Int32(buffer.count), &found, $0)
            }
        }
        return rects.prefix(Int(found)).map { PixelRect(x: Int($0.x), y: Int($0.y), w: Int($0.width), h: Int($0.height)) }
    }

    /// The confidence of the strongest window that passes the whole cascade
    /// (no neighbour grouping), or nil when none does.
    func bestWeight(_ gray: slcv_image, scaleFactor: Double, minSize: (w: Int, h: Int) = (0, 0),
                    maxSize: (w: Int, h: Int) = (0, 0)) throws -> Double? {
        var best = -Double.infinity
        var hits: Int32 = 0
        try OpenCVError.check {
            slcv_cascade_best_weight(handle, gray, scaleFactor, Int32(minSize.w), Int32(minSize.h), Int32(maxSize.w),
                                     Int32(maxSize.h), &best, &hits, $0)
        }
        return hits > 0 && best.isFinite ? best : nil
    }
}
