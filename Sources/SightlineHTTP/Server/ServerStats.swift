import SightlineSupport

/// The server's own counts, apart from any camera's: connections refused or
/// evicted before their headers were in, and requests whose headers stopped
/// coming.
///
/// Threads: counted on the service thread, read from any; the counts are in a `Mutex`.
public final class ServerStats: Sendable {
    public struct Snapshot: Sendable, Equatable, Codable {
        /// Connections closed at once: their address had too many unfinished ones.
        public var connectionsRefused: UInt64 = 0
        /// Unfinished connections shut down, oldest first, to make room.
        public var connectionsEvicted: UInt64 = 0
        /// Requests answered 400 because their headers stopped coming.
        public var headersStalled: UInt64 = 0
        public init() {}
    }

    private let counts = Locked(Snapshot())

    public init() {}

    public func snapshot() -> Snapshot { counts.withLock { $0 } }

    func connectionRefused() { counts.withLock { $0.connectionsRefused += 1 } }
    func connectionEvicted() { counts.withLock { $0.connectionsEvicted += 1 } }
    func headersStalled() { counts.withLock { $0.headersStalled += 1 } }
}
