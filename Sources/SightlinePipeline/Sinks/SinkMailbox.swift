import Foundation
import SightlineSupport
import Synchronization
import SightlineVision

/// A one-slot mailbox between the pipeline and a sink's thread: `put` never
/// waits and replaces a value the sink has not taken yet (counted as
/// skipped); `take` waits for the next value. The slot and the counts are in
/// a `Mutex`; the semaphore only wakes the taker (it is signalled when the
/// slot goes from empty to full, and on close).
public final class SinkMailbox<Value: Sendable>: Sendable {
    private struct State {
        var slot: Value?
        var closed = false
        var counts = SinkCounts()
    }

    private let state = Locked(State())
    private let ready = DispatchSemaphore(value: 0)

    public init() {}

    /// Any thread, never waits. Returns false once closed.
    @discardableResult
    public func put(_ value: Value) -> Bool {
        let wake = state.withLock { state -> Bool? in
            guard !state.closed else { return nil }
            state.counts.delivered += 1
            let wasEmpty = state.slot == nil
            if !wasEmpty { state.counts.skipped += 1 }
            state.slot = value
            return wasEmpty
        }
        guard let wake else { return false }
        if wake { ready.signal() }
        return true
    }

    /// The sink's thread: the newest value, waiting up to `timeout` seconds;
    /// nil on timeout or once closed and empty.
    public func take(timeout: Double) -> Value? {
        while true {
            if let value = state.withLock({ state -> Value? in
                defer { state.slot = nil }
                return state.slot
            }) {
                return value
            }
            if state.withLock({ $0.closed }) { return nil }
            if ready.wait(timeout: .now() + timeout) == .timedOut {
                return state.withLock { state -> Value? in
                    defer { state.slot = nil }
                    return state.slot
                }
            }
        }
    }

    /// The sink's thread: a taken value is done with.
    public func consumed() {
        state.withLock { $0.counts.consumed += 1 }
    }

    /// Any thread: wakes the taker; later puts are refused.
    public func close() {
        state.withLock { $0.closed = true }
        ready.signal()
    }

    public var counts: SinkCounts { state.withLock { $0.counts } }

    public var isClosed: Bool { state.withLock { $0.closed } }
}
