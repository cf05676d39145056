import CSightlineOpenCV
import Foundation

/// Where the shape model's compact form is kept between runs, so that a
/// start reads about 10 MB in some 30 ms instead of decoding dlib's 95 MB
/// file and compacting it (about 1.7 s of a core; every server start and
/// every test's server paid it).
///
/// The cache file is named by the model file's name, size and modification
/// time, so a changed model is compacted afresh. It is written to a
/// temporary name and renamed into place, so a reader never sees half of
/// one (two servers starting at once both compact it; the last rename
/// wins, and both files are whole). A cache file that does not read back
/// whole is compacted again and replaced; a folder that cannot be written
/// only costs the time. The folder: `SIGHTLINE_CACHE_DIR`, else systemd's
/// `CACHE_DIRECTORY` (the unit's `CacheDirectory=`), else
/// `$XDG_CACHE_HOME/sightline`, else `~/.cache/sightline`.
struct ShapeModelCache {
    let directory: String?

    init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        directory = Self.directory(environment: environment)
    }

    init(directory: String?) {
        self.directory = directory
    }

    static func directory(environment: [String: String]) -> String? {
        func given(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        if let own = given("SIGHTLINE_CACHE_DIR") { return own }
        // systemd may list several folders, separated by ':'.
        if let systemd = given("CACHE_DIRECTORY") { return String(systemd.split(separator: ":").first ?? "") }
        if let xdg = given("XDG_CACHE_HOME") { return (xdg as NSString).appendingPathComponent("sightline") }
        if let home = given("HOME") { return (home as NSString).appendingPathComponent(".cache/sightline") }
        return nil
    }

    /// The cache file for the model at `modelPath`, nil when it has no folder or the model no attributes.
    func file(for modelPath: String) -> String? {
        guard let directory,
              let attributes = try? FileManager.default.attributesOfItem(atPath: modelPath),
              let size = attributes[.size] as? Int,
              let modified = attributes[.modificationDate] as? Date else { return nil }
        let name = (modelPath as NSString).lastPathComponent
        let stamp = Int64((modified.timeIntervalSince1970 * 1000).rounded())
        return (directory as NSString).appendingPathComponent("\(name).\(size)-\(stamp).compact")
    }

    /// The compact model from the cache, or nil (no cache file, or not a whole one).
    func read(for modelPath: String) -> OpaquePointer? {
        guard let file = file(for: modelPath), FileManager.default.fileExists(atPath: file) else { return nil }
        var model: OpaquePointer?
        guard (try? OpenCVError.check({ slcv_shape_model_read(file, &model, $0) })) != nil else { return nil }
        return model
    }

    /// Keeps `model` for the next start; false when it could not (the folder is not writable, say).
    @discardableResult
    func write(_ model: OpaquePointer, for modelPath: String) -> Bool {
        guard let file = file(for: modelPath) else { return false }
        let directory = (file as NSString).deletingLastPathComponent
        guard (try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)) != nil
        else { return false }
        let temporary = file + ".\(getpid()).\(UInt32.random(in: 0 ... .max)).partial"
        guard (try? OpenCVError.check({ slcv_shape_model_write(model, temporary, $0) })) != nil,
              rename(temporary, file) == 0 else {
            unlink(temporary)
            return false
        }
        return true
    }
}
