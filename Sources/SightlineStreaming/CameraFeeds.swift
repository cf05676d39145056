import SightlineSupport

/// The server's cameras by the paths that stream them. Cameras come and go
/// at runtime (`CameraStreams.add`, `remove`); the first, the
/// unprefixed routes' camera, stays for the server's life.
///
/// Threads: read on the server's service thread, changed from any thread; the list
/// is in a `Mutex`.
final class CameraFeeds: Sendable {
    /// The first camera's: the unprefixed routes'.
    let first: CameraFeed
    private let feeds: Locked<[CameraFeed]>

    init(all: [CameraFeed]) {
        precondition(!all.isEmpty, "a stream server needs a camera")
        first = all[0]
        feeds = Locked(all)
    }

    /// Every camera now, the first first.
    var all: [CameraFeed] { feeds.withLock { $0 } }

    /// Any thread: streams `feed` from now on; false when a camera of that name (ignoring case) is there.
    func add(_ feed: CameraFeed) -> Bool {
        feeds.withLock { feeds in
            guard !feeds.contains(where: { $0.name.lowercased() == feed.name.lowercased() }) else { return false }
            feeds.append(feed)
            return true
        }
    }

    /// Any thread: camera `name` streams no more; its feed, or nil when there is
    /// none of that name or it is the first (which stays).
    func remove(named name: String) -> CameraFeed? {
        feeds.withLock { feeds in
            guard let index = feeds.firstIndex(where: { $0.name == name }), index > 0 else { return nil }
            return feeds.remove(at: index)
        }
    }

    /// Whether `feed` (the same camera, not one of the same name made since) is streamed.
    func contains(_ feed: CameraFeed) -> Bool {
        feeds.withLock { feeds in feeds.contains { $0.frames === feed.frames } }
    }

    /// The camera `path` streams, and the path within it: `/ws` is the
    /// first's `/ws`, `/cam/NAME/ws` camera NAME's; nil for `/cam/` of a
    /// camera that does not exist. Names are compared ignoring case, as
    /// everywhere else (`/cam/Front/ws` is camera `front`'s).
    func feed(forPath path: String) -> (feed: CameraFeed, path: String)? {
        guard path.hasPrefix("/cam/") else { return (first, path) }
        let rest = path.dropFirst("/cam/".count)
        let name = rest.prefix { $0 != "/" }
        let key = name.lowercased()
        guard let feed = feeds.withLock({ feeds in feeds.first(where: { $0.name.lowercased() == key }) }) else { return nil }
        return (feed, String(rest.dropFirst(name.count)))
    }
}
