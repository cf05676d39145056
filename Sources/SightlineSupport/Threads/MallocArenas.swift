import CMalloc
import Glibc

/// glibc gives each thread that allocates under contention an arena of its
/// own, up to eight per core, and each keeps the pages it has freed. A
/// server's threads (capture, pipeline, libwebsockets, face worker, request
/// worker, sinks) each end up with one. Two arenas are enough for them: on
/// the demo with 10 viewers resident memory fell from 96.6 to 92.1 MiB after
/// 30 s, at the same CPU (0.238 and 0.233 cores).
public enum MallocArenas {
    public static let serverLimit: Int32 = 2

    /// Caps the arenas at `serverLimit`, unless the user set
    /// MALLOC_ARENA_MAX (glibc's own variable), which then stands. Call it
    /// before the server starts its threads.
    @discardableResult
    public static func limitForServer() -> Bool {
        guard getenv("MALLOC_ARENA_MAX") == nil else { return false }
        return mallopt(M_ARENA_MAX, serverLimit) == 1
    }

    /// Hands the pages freed at the top of the heap and in the arenas back
    /// to the system (glibc's malloc_trim). For after a large passing
    /// allocation, such as reading a model file, which would otherwise stay
    /// resident.
    public static func returnFreedPages() {
        _ = malloc_trim(0)
    }
}
