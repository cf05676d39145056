import Foundation
import SightlineSupport
import Synchronization
import SightlineVision

/// A mailbox between the pipeline and a sink's thread, one slot by default:
/// `put` never waits; with every slot taken it drops the oldest value the
/// sink has not taken yet (counted as skipped); `take` waits for the oldest
/// value. The slots and the counts are in a `Locked`; the semaphore only
/// wakes the taker (it is signalled when the slots go from empty to not,
/// and on close).
public final class SinkMailbox<Value: Sendable>: Sendable {
    private struct State {
        var slots: [Value] = []
        var closed = false
        var counts = SinkCounts()
    }

    private let state = Locked(State())
    private let ready = DispatchSemaphore(value: 0)
    /// Values held at most (1: the newest only).
    public let capacity: Int

    public init(capacity: Int = 1) {
        self.capacity = max(1, capacity)
    }

    /// Any thread, never waits. Returns false once closed.
    @discardableResult
    public func put(_ value: Value) -> Bool {
        let wake = state.withLock { state -> Bool? in
            guard !state.closed else { return nil }
            state.counts.delivered += 1
            let wasEmpty = state.slots.isEmpty
            if state.slots.count >= capacity {
                state.slots.removeFirst()
                state.counts.skipped += 1
            }
            state.slots.append(value)
            return wasEmpty
        }
        guard let wake else { return false }
        if wake { ready.signal() }
        return true
    }

    /// The sink's thread: the oldest value held, waiting up to `timeout`
    /// seconds; nil on timeout or once closed and empty.
    public func take(timeout: Double) -> Value? {
        func next() -> Value? {
            state.withLock { state in state.slots.isEmpty ? nil : state.slots.removeFirst() }
        }
        while true {
            if let value = next() { return value }
            if state.withLock({ $0.closed }) { return nil }
            if ready.wait(timeout: .now() + timeout) == .timedOut { return next() }
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
