import Foundation

/// The one-frame slot between the capture thread and the pipeline.
///
/// `put` (capture thread) replaces whatever frame is waiting and hands the
/// replaced one back so the caller counts it as dropped: nothing ever
/// queues behind a busy pipeline. `take` (pipeline thread) blocks for the
/// next frame. `@unchecked Sendable`: `slot` and `closed` are read and
/// written only while `condition` (an NSCondition: a lock with waits, which
/// `Mutex` has not) is held.
public final class FrameMailbox: @unchecked Sendable {
    private let condition = NSCondition()
    private var slot: Frame?
    private var closed = false

    public init() {}

    /// Leaves `frame` for the pipeline; returns the frame it superseded, if any.
    @discardableResult
    public func put(_ frame: Frame) -> Frame? {
        condition.lock()
        defer { condition.unlock() }
        let superseded = slot
        slot = frame
        condition.broadcast()
        return superseded
    }

    /// The waiting frame, blocking up to `timeout` seconds; nil on timeout or close.
    public func take(timeout: Double) -> Frame? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while slot == nil && !closed {
            if !condition.wait(until: deadline) { break }
        }
        let frame = slot
        slot = nil
        if frame != nil { condition.broadcast() }
        return frame
    }

    /// Blocks until the slot is empty (the pipeline took the frame), for
    /// sources paced by the pipeline; false on timeout or close.
    @discardableResult
    public func waitUntilTaken(timeout: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while slot != nil && !closed {
            if !condition.wait(until: deadline) { return false }
        }
        return !closed
    }

    /// Wakes every waiter; later takes return nil at once.
    public func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }
}
