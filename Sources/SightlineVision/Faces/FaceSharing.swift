import Foundation

/// What every camera of one server shares for faces: one detection thread
/// (`FaceDetectionThread`: each camera's worker is a lane of it, in turns)
/// and, per YuNet model file, one set of loaded models (`YuNetModels`) that
/// the cameras' detectors use on that thread. Each camera keeps its own
/// tracker, detector state (refine and attribute records) and cut-frame
/// detector (that one runs on its own pipeline thread).
///
/// Threads: made and asked for models on the main thread while the cameras
/// are built (`models(for:)` is not called after); the thread and the
/// models are used on the detection thread from then on. `@unchecked
/// Sendable` by that order: `loaded` is written only on the main thread
/// before any camera starts.
public final class FaceSharing: @unchecked Sendable {
    public let thread = FaceDetectionThread()
    private var loaded: [String: YuNetModels] = [:]

    public init() {}

    /// Main thread, while building cameras: the models of `modelPath`,
    /// loaded on first use (with the attribute reader and person check
    /// `options` asks for, made then).
    func models(for modelPath: String, options: YuNetDetector.Options) throws -> YuNetModels {
        if let models = loaded[modelPath] { return models }
        let models = try YuNetModels(modelPath: modelPath, options: options)
        loaded[modelPath] = models
        return models
    }

    /// Model files loaded (for `/api/state` and tests).
    public var modelsLoaded: Int { loaded.count }

    /// Main thread, after every camera stopped.
    public func stop() {
        thread.stop()
    }
}

/// A YuNet model file's loaded parts: the network, the attribute reader
/// (cascades, the 68-point fit's buffers) and the person check (dlib's HOG
/// detector). One per model file per server when cameras share a detection
/// thread (`FaceSharing`); otherwise each detector makes its own.
///
/// Used on one thread at a time: the shared detection thread, or the one
/// detector that made them. `@unchecked Sendable` by that.
public final class YuNetModels: @unchecked Sendable {
    let network: YuNetNetwork
    let attributes: FaceAttributeReader?
    let personCheck: PersonFaceCheck?

    init(modelPath: String, options: YuNetDetector.Options) throws {
        network = try YuNetNetwork(modelPath: modelPath)
        attributes = options.attributes.map { FaceAttributeReader(options: $0) }
        personCheck = options.checkPersons ? try PersonFaceCheck() : nil
    }
}
