import Foundation

/// Every open connection the server tracks, by lws handle and (HTTP) by id,
/// and what a WebSocket asked for between its upgrade and ESTABLISHED.
/// Service thread only (owned by `CallbackDispatch`, shared with the parts it
/// wires); never touched elsewhere.
final class ConnectionTable {
    /// What a WebSocket brought to its upgrade, kept until it is ESTABLISHED.
    struct Upgrade {
        /// Its credential (the stream ends if it is revoked) and when it was checked (`MonotonicClock.nanos`).
        var credential: Credential?
        var credentialCheckedNanos: UInt64 = 0
        /// Makes its sender once it is ESTABLISHED (the `StreamProvider`'s).
        var open: StreamOpener
    }

    private var connections: [OpaquePointer: Connection] = [:]
    private var connectionsByID: [UInt64: OpaquePointer] = [:]
    private var nextID: UInt64 = 1
    /// WebSockets between their upgrade and ESTABLISHED.
    var upgrades: [OpaquePointer: Upgrade] = [:]

    subscript(wsi: OpaquePointer) -> Connection? {
        connections[wsi]
    }

    /// The open connection `id` and its handle (nil: it closed meanwhile).
    func connection(id: UInt64) -> (wsi: OpaquePointer, connection: Connection)? {
        guard let wsi = connectionsByID[id], let connection = connections[wsi] else { return nil }
        return (wsi, connection)
    }

    /// Every connection with its handle.
    var all: [OpaquePointer: Connection] { connections }

    /// A connection id, never reused in the server's life.
    func takeID() -> UInt64 {
        defer { nextID += 1 }
        return nextID
    }

    /// A WebSocket, by handle.
    func add(_ connection: Connection, for wsi: OpaquePointer) {
        connections[wsi] = connection
    }

    /// An HTTP connection, by handle and by id (for the worker's answers).
    func addHTTP(_ connection: Connection, for wsi: OpaquePointer) {
        connections[wsi] = connection
        connectionsByID[connection.id] = wsi
    }

    /// The connection closed: forgets it, and its upgrade if it never finished one.
    func remove(_ wsi: OpaquePointer) -> Connection? {
        upgrades.removeValue(forKey: wsi)
        guard let connection = connections.removeValue(forKey: wsi) else { return nil }
        connectionsByID.removeValue(forKey: connection.id)
        return connection
    }
}
