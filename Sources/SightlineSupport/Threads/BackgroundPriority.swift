import Glibc

/// Background threads (face detection, slow HTTP requests, event writing) run
/// at a lower scheduling priority than the frame path (capture, pipeline,
/// libwebsockets): on a busy machine the frames win the CPU and the
/// background work waits, rather than the other way round. A viewer on a
/// 2-core machine saw a 108 ms gap (3.2 frame budgets) while template uploads
/// were decoded and faces detected beside the pipeline at the same priority.
public enum BackgroundPriority {
    /// Added to a background thread's nice value (Linux nice is per thread), at most 19.
    public static let niceness: Int32 = 10
    /// The face worker's: less, because faces must keep up with the picture
    /// against other processes too. At 10 (about a tenth of a core beside one
    /// busy process at nice 0) a 2-core machine with one busy loop beside the
    /// server boxed 26 % of the live clip's faces, with 5 id switches; at 5
    /// (about a quarter) 96.8 %, as on an idle machine, and 96 % beside two.
    public static let faceNiceness: Int32 = 5

    /// Lowers the calling thread's priority by `by` nice levels (on Linux,
    /// `who` 0 is the calling thread, not the whole process); a failure leaves
    /// the thread as it was.
    public static func lowerCurrentThread(by levels: Int32 = niceness) {
        let current = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, min(19, current + levels))
    }
}
