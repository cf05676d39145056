import Foundation
import SightlineSupport
import Synchronization

/// What every camera of one server shares for faces: one detection thread
/// (`FaceDetectionThread`: each camera's worker is a lane of it, in turns)
/// and, per YuNet model file, one set of loaded models (`YuNetModels`) that
/// the cameras' detectors use on that thread. Each camera keeps its own
/// tracker, detector state (refine and attribute records) and cut-frame
/// detector (that one runs on its own pipeline thread).
///
/// Threads: asked for models on the main thread while the configured
/// cameras are built, and on the request worker when a camera is added at
/// runtime, while the service thread may read how many are loaded (`GET
/// /api/cameras`): the loaded models are in `loaded`, a `Mutex`. The thread
/// and the models are used on the detection thread.
public final class FaceSharing: Sendable {
    public let thread = FaceDetectionThread()
    private let loaded = Locked<[String: YuNetModels]>([:])

    public init() {}

    /// Main thread or request worker, while building a camera: the models
    /// of `modelPath`, loaded on first use (with the attribute reader and
    /// person check `options` asks for, made then). The load (a second or
    /// more) runs outside the lock, which the service thread takes for
    /// `modelsLoaded`; cameras are made one at a time (`CameraRegistry`), and
    /// were two loads of one file to meet, the first one kept is used.
    func models(for modelPath: String, options: YuNetDetector.Options) throws -> YuNetModels {
        if let models = loaded.withLock({ $0[modelPath] }) { return models }
        let made = try YuNetModels(modelPath: modelPath, options: options)
        return loaded.withLock { loaded in
            if let models = loaded[modelPath] { return models }
            loaded[modelPath] = made
            return made
        }
    }

    /// Model files loaded (for `/api/state` and tests); any thread.
    public var modelsLoaded: Int { loaded.withLock { $0.count } }

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
        network = try YuNetNetwork(modelPath: modelPath, runtime: options.runtime)
        attributes = options.attributes.map { FaceAttributeReader(options: $0) }
        personCheck = options.checkPersons ? try PersonFaceCheck() : nil
    }
}
