import CSightlineOpenCV

/// How many threads OpenCV's own parallel loops (template matching, resizes,
/// the face network's layers) may use.
///
/// Sightline already runs its stages on threads of its own (the pipeline,
/// the face worker, the request worker), and OpenCV's threads come from TBB,
/// whose idle workers spin in `sched_yield` between the many short parallel
/// loops of a live pipeline: CPU that shows up in `top` and does no work, and
/// work that escapes the face worker's lower priority. So `serve` and `bench`
/// run each OpenCV call on its calling thread by default
/// (`performance.opencvThreads: 1`); more threads lower one pass's latency
/// on an idle machine at a higher total CPU cost.
public enum OpenCVThreads {
    /// Sets the count (1: every call on its calling thread). Only before any
    /// OpenCV work starts: with TBB, changing it re-creates the arena that
    /// parallel loops on other threads may be using (a test that did so while
    /// other tests ran OpenCV crashed the test run inside libtbb).
    public static func set(_ threads: Int) {
        slcv_set_threads(Int32(clamped(threads)))
    }

    /// The count `set` asks for: 1 to 64 (0 would mean OpenCV's own default).
    static func clamped(_ threads: Int) -> Int { max(1, min(threads, 64)) }

    /// The count OpenCV uses now.
    public static var current: Int { Int(slcv_threads()) }
}
