import Glibc
import Synchronization

/// State guarded by a lock: Swift's `Mutex`, which the compiler checks
/// (`Sendable`, `sending` in and out), made visible to ThreadSanitizer.
///
/// On Linux `Mutex` locks with futexes inside the Swift runtime's own
/// library, which is not instrumented, so ThreadSanitizer sees no ordering
/// between two threads' turns and reports every `Mutex`-guarded access it
/// catches as a race (a 10-line program with two threads incrementing a
/// `Mutex<[Int: Int]>` gets 7 reports and the right total; the same with
/// `NSLock` none). `Locked` tells it: each turn acquires the lock's
/// address on entry and releases it on exit (`__tsan_acquire` and
/// `__tsan_release`, looked up once and absent outside a
/// `-sanitize=thread` build, where a turn costs one more nil check).
public struct Locked<Value: ~Copyable>: ~Copyable, Sendable {
    private let mutex: Mutex<Value>

    public init(_ value: consuming sending Value) {
        mutex = Mutex(value)
    }

    /// Runs `body` with the value, holding the lock.
    public borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            let token = withUnsafePointer(to: mutex) { UnsafeRawPointer($0) }
            RaceDetectorAnnotations.acquire?(token)
            defer { RaceDetectorAnnotations.release?(token) }
            return try body(&value)
        }
    }
}

/// ThreadSanitizer's annotations for synchronization it cannot see, when
/// the process runs under it (nil otherwise).
enum RaceDetectorAnnotations {
    typealias Mark = @convention(c) (UnsafeRawPointer?) -> Void

    static let acquire: Mark? = lookUp("__tsan_acquire")
    static let release: Mark? = lookUp("__tsan_release")

    private static func lookUp(_ name: String) -> Mark? {
        dlsym(nil, name).map { unsafeBitCast($0, to: Mark.self) }
    }
}
