import CSightlineOpenCV
import Foundation

/// OpenCV contrib's LBPH face recognizer behind the C shim (sightline_lbph.h).
///
/// Thread ownership: not thread-safe; its owner (FaceRecognizer, itself
/// guarded by FaceService's model lock) makes every call.
public final class LBPHModel {
    /// LBPHFaceRecognizer::create's parameters (OpenCV's defaults).
    public struct Parameters: Sendable, Equatable {
        public var radius: Int32 = 1
        public var neighbors: Int32 = 8
        public var gridX: Int32 = 8
        public var gridY: Int32 = 8

        public init() {}
    }

    private let handle: OpaquePointer

    init(parameters: Parameters = Parameters()) throws {
        var created: OpaquePointer?
        try OpenCVError.check {
            sllbph_create(parameters.radius, parameters.neighbors, parameters.gridX, parameters.gridY, &created, $0)
        }
        guard let created else { throw OpenCVError(code: -1, message: "no LBPH model returned") }
        handle = created
    }

    deinit { sllbph_release(handle) }

    /// Number of stored samples (one LBP histogram per enrolled crop).
    var sampleCount: Int { Int(sllbph_sample_labels(handle, nil, 0)) }

    /// The label of every stored sample.
    var sampleLabels: [Int32] {
        let count = sampleCount
        guard count > 0 else { return [] }
        var labels = [Int32](repeating: 0, count: count)
        let written = labels.withUnsafeMutableBufferPointer { sllbph_sample_labels(handle, $0.baseAddress, Int32(count)) }
        return Array(labels.prefix(Int(min(Int32(count), written))))
    }

    /// Learns gray crops (all one size) under their labels, keeping earlier samples.
    func update(crops: [ImageBuffer], labels: [Int32]) throws {
        precondition(crops.count == labels.count, "one label per crop")
        guard !crops.isEmpty else { return }
        guard crops.allSatisfy({ $0.channels == 1 }) else {
            throw OpenCVError(code: 11, message: "face crops must be gray")
        }
        let views = crops.map(\.cView)
        _ = try withExtendedLifetime(crops) {
            try OpenCVError.check { err in
                views.withUnsafeBufferPointer { viewPointer in
                    labels.withUnsafeBufferPointer { labelPointer in
                        sllbph_update(handle, viewPointer.baseAddress, labelPointer.baseAddress, Int32(crops.count), err)
                    }
                }
            }
        }
    }

    /// The nearest sample's label and chi-square distance, nil when the model is empty.
    func predict(_ crop: ImageBuffer) throws -> (label: Int32, distance: Double)? {
        guard sampleCount > 0 else { return nil }
        var label: Int32 = -1
        var distance = Double.greatestFiniteMagnitude
        try OpenCVError.check { sllbph_predict(handle, crop.cView, &label, &distance, $0) }
        return (label, distance)
    }

    /// Forgets every sample of one label.
    func remove(label: Int32) throws {
        try OpenCVError.check { sllbph_remove_label(handle, label, $0) }
    }

    func save(to path: String) throws {
        try OpenCVError.check { sllbph_save(handle, path, $0) }
    }

    func load(from path: String) throws {
        try OpenCVError.check { sllbph_load(handle, path, $0) }
    }
}
