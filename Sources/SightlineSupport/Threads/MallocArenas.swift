import CMalloc
import Dispatch
import Glibc
import Synchronization

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

    /// As `returnFreedPages`, unless pages were handed back less than
    /// `seconds` ago (by this call); true when it trimmed. For after a large
    /// pass that recurs (a face network's fine pass, once a second): a trim
    /// also hands back the pages of the buffers every usual pass uses again
    /// (a 1080p frame's picture and gray copy, the network's activations),
    /// and each comes back as page faults, fresh pages zeroed by the kernel.
    /// Trimming after every fine pass, a 1080p camera's face thread took
    /// 5,200 page faults a second (1,000 without) and the whole process
    /// 0.262 cores against 0.231.
    @discardableResult
    public static func returnFreedPages(atMostEvery seconds: Double, now: Double) -> Bool {
        let due = lastPaced.withLock { last in
            guard now - last >= seconds else { return false }
            last = now
            return true
        }
        if due { returnFreedPages() }
        return due
    }
    private static let lastPaced = Mutex<Double>(-Double.infinity)

    /// How often a running server hands freed pages back
    /// (`startReturningFreedPages`).
    public static let serverTrimSeconds = 5

    /// Hands freed pages back every `seconds`, from a timer on a utility
    /// queue, for as long as the process runs. Why: free() gives back only
    /// the top of a heap, and a server's heap is holed by buffers that come
    /// and go in different sizes (frames, JPEGs, a face pass's network blobs,
    /// which are 4 times larger on a fine pass). Those holes stayed resident:
    /// on `vtest.avi` with faces on, resident memory grew from 126 MiB after
    /// a minute to 141 MiB after three and a half, of which malloc_trim gave
    /// back 21.6 MiB; 38 MiB was in use. Side by side with the build before
    /// over 10 minutes: 141 against 151 MiB (119 between fine passes), at
    /// 0.063 against 0.060 cores (docs/benchmarks.md, "Memory"). A trim walks the arenas' free
    /// chunks and returns their whole pages (madvise); a page used again
    /// faults back in, a few milliseconds of faults per trim at most.
    /// Returns the timer, which the caller keeps (cancelling it stops).
    public static func startReturningFreedPages(every seconds: Int = serverTrimSeconds) -> DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
        timer.schedule(deadline: .now() + .seconds(seconds), repeating: .seconds(seconds), leeway: .seconds(1))
        timer.setEventHandler { returnFreedPages() }
        timer.resume()
        return timer
    }
}
