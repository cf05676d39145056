import CSightlineOpenCV
import Foundation
import Synchronization
import SightlineSupport

/// dlib's 68-point shape predictor (Debian's `libdlib-data`), through the
/// shim in `sightline_shape.h`.
///
/// Loading dlib's file takes about 1.7 s (the shim keeps its leaves compact:
/// about 10 MB held), so the compact form is kept in a cache folder for the
/// next start (`ShapeModelCache`: about 30 ms), and one model per file is
/// loaded once per process and shared (`shared(path:)`); fitting only reads it.
/// `@unchecked Sendable`: the handle is immutable after loading and a fit
/// only reads it (`slcv_shape_fit` keeps its scratch on its own stack), so
/// any thread may fit with it at the same time; it is released only in deinit, when no thread holds it.
public final class FaceShapeModel: @unchecked Sendable {
    public static let defaultPath = "/usr/share/dlib/shape_predictor_68_face_landmarks.dat"
    /// Points of the iBUG 300-W layout the attribute code reads.
    public static let parts = 68

    private let handle: OpaquePointer
    public let path: String

    /// `cache`: where the compact form is read from, and written to after dlib's file is read.
    public convenience init(path: String = FaceShapeModel.defaultPath) throws {
        try self.init(path: path, cache: ShapeModelCache())
    }

    init(path: String, cache: ShapeModelCache) throws {
        var model = cache.read(for: path)
        if model == nil {
            try OpenCVError.check { slcv_shape_model_load(path, &model, $0) }
            if let model { cache.write(model, for: path) }
        }
        guard let model else { throw OpenCVError(code: -1, message: "the shape model did not load") }
        guard slcv_shape_model_parts(model) == Int32(Self.parts) else {
            slcv_shape_model_release(model)
            throw OpenCVError(code: 41, message: "the shape model does not place 68 points")
        }
        handle = model
        self.path = path
    }

    deinit { slcv_shape_model_release(handle) }

    /// Models loaded so far, by path (nil: the file did not load; tried once).
    private static let loaded = Locked<[String: Result<FaceShapeModel, OpenCVError>]>([:])

    /// The process's model for `path`, loading it on first use (on the
    /// calling thread, under the lock: a second caller waits for the first).
    public static func shared(path: String = FaceShapeModel.defaultPath) throws -> FaceShapeModel {
        try loaded.withLock { models in
            if let result = models[path] { return try result.get() }
            let result: Result<FaceShapeModel, OpenCVError>
            do {
                result = .success(try FaceShapeModel(path: path))
            } catch let error as OpenCVError {
                result = .failure(error)
            } catch {
                result = .failure(OpenCVError(code: -1, message: "\(error)"))
            }
            models[path] = result
            // Reading the file passes through tens of MB of dlib's own form.
            MallocArenas.returnFreedPages()
            return try result.get()
        }
    }

    /// The 68 points of the face in an upright crop (crop pixels).
    package func fit(_ crop: UprightFaceCrop) throws -> FaceShape {
        var points = [Float](repeating: 0, count: 2 * Self.parts)
        let box = crop.box
        try OpenCVError.check { err in
            points.withUnsafeMutableBufferPointer {
                slcv_shape_fit(handle, crop.image.cView, box.x, box.y, box.w, box.h, $0.baseAddress,
                               Int32($0.count), err)
            }
        }
        return FaceShape(points: (0..<Self.parts).map { PixelPoint(x: Double(points[2 * $0]), y: Double(points[2 * $0 + 1])) })
    }
}
