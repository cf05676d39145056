import Synchronization

/// A callback that one thread sets and any thread calls, under a lock.
///
/// Why not a bare `Mutex<(@Sendable () -> Void)?>`: Mutex is generic, so a
/// closure stored in it is kept in the generic (indirect) form, and
/// `withLock { $0 }` passes it `inout`. Each such read converts it to the
/// direct form and writes it back converted again, wrapping the stored
/// closure in two more reabstraction thunks that capture the old one. The
/// stream sink read its wake-up closure so on every frame: after 25 minutes
/// the chain was over 100,000 closures deep (a slow leak), and releasing it
/// at shutdown recursed through every one of them and overflowed the main
/// thread's stack (SIGTERM crashed the server). Here the closure lives in a
/// struct, which is stored as it is: reads leave it unchanged.
/// (LockedCallbackTests reads one 300,000 times and releases it on a small stack.)
public final class LockedCallback<Input, Output>: Sendable {
    private struct Stored: Sendable {
        let call: @Sendable (Input) -> Output
    }

    private let stored = Locked<Stored?>(nil)

    public init(_ callback: (@Sendable (Input) -> Output)? = nil) {
        set(callback)
    }

    /// Replaces the callback (nil: none).
    public func set(_ callback: (@Sendable (Input) -> Output)?) {
        let replacement = callback.map(Stored.init)
        stored.withLock { $0 = replacement }
    }

    public var isSet: Bool { stored.withLock { $0 != nil } }

    /// The callback's answer, or nil when none is set. It runs outside the lock.
    public func callAsFunction(_ input: Input) -> Output? {
        stored.withLock { $0 }?.call(input)
    }
}

extension LockedCallback where Input == Void {
    /// Replaces the callback with one that takes nothing (nil: none).
    public func setAction(_ callback: (@Sendable () -> Output)?) {
        guard let callback else { return set(nil) }
        let adapted: @Sendable (Void) -> Output = { _ in callback() }
        set(adapted)
    }

    public func callAsFunction() -> Output? { self(()) }
}
