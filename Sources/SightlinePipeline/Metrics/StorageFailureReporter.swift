import Foundation
import Logging
import SightlineSupport

/// Where the API's failed writes to the data directory go: counted by what
/// they were for (`PipelineStats.storageWriteFailures`, shown in
/// `/api/state` and `/metrics`) and logged in words without paths, so the
/// HTTP answer and the log say the same thing.
///
/// Threads: any; it holds only `Sendable` references.
public struct StorageFailureReporter: Sendable {
    public let stats: PipelineStats?
    public let logger: Logger?

    public init(stats: PipelineStats? = nil, logger: Logger? = nil) {
        self.stats = stats
        self.logger = logger
    }

    /// For a `StorageError` (or a Foundation error carrying an errno):
    /// counts it under `area`, logs "`action`: reason" unless `log` is
    /// false, and returns it. Nil for any other error (nothing counted).
    @discardableResult
    public func report(_ error: Error, area: StorageArea, action: String, log: Bool = true) -> StorageError? {
        guard let storage = StorageError(error, path: "") else { return nil }
        stats?.storageWriteFailed(area)
        if log { logger?.error("\(storage.message(action))", metadata: ["area": "\(area.rawValue)"]) }
        return storage
    }
}
