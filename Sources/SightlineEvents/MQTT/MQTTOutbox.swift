import Foundation
import Synchronization
import SightlineVision
import SightlinePipeline

/// What waits to be published, bounded whatever the broker does:
/// - event messages in order, at most `capacity`; when full the oldest is
///   dropped and counted (so after an outage the newest events go out);
/// - state messages (counts, snapshots, stats, discovery), newest per
///   topic: a newer value replaces one not yet sent, so they are bounded by
///   the number of topics and never dropped.
/// Events go out before states.
///
/// Threads: pushes from the pipeline thread (and others), `next` and
/// `requeue` from the publisher's thread; all in one `Mutex`. Each push
/// calls `wake` (outside the lock) so the publisher sends at once.
public final class MQTTOutbox: Sendable {
    public enum Item: Sendable, Equatable {
        /// Formatted on the publisher's thread, off the pipeline.
        case event(EventChange.Kind, before: EventRecord, after: EventRecord)
        case message(MQTTMessage)
    }

    public struct Counts: Codable, Sendable, Equatable {
        /// Event messages waiting.
        public var events = 0
        /// State topics waiting.
        public var states = 0
        /// Event messages dropped because `capacity` were waiting.
        public var dropped: UInt64 = 0
    }

    private struct State {
        var fifo: [Item] = []
        var latest: [String: MQTTMessage] = [:]
        var latestOrder: [String] = []
        var dropped: UInt64 = 0
    }

    public let capacity: Int
    private let state = Mutex(State())
    private let wake: @Sendable () -> Void

    public init(capacity: Int, wake: @escaping @Sendable () -> Void = {}) {
        self.capacity = max(1, capacity)
        self.wake = wake
    }

    /// An event message, after those waiting (any thread, never waits).
    public func push(_ item: Item) {
        state.withLock { state in
            state.fifo.append(item)
            trim(&state)
        }
        wake()
    }

    /// A state message: replaces a waiting one of the same topic.
    public func pushState(_ message: MQTTMessage) {
        state.withLock { state in
            if state.latest.updateValue(message, forKey: message.topic) == nil { state.latestOrder.append(message.topic) }
        }
        wake()
    }

    /// A state message, unless a newer one of that topic is waiting (a republish after reconnecting).
    public func pushStateIfAbsent(_ message: MQTTMessage) {
        state.withLock { state in
            guard state.latest[message.topic] == nil else { return }
            state.latest[message.topic] = message
            state.latestOrder.append(message.topic)
        }
        wake()
    }

    /// Messages handed out but not acknowledged when the connection was
    /// lost, back in front in their order (the oldest dropped if full).
    public func requeue(_ items: [Item]) {
        guard !items.isEmpty else { return }
        state.withLock { state in
            state.fifo.insert(contentsOf: items, at: 0)
            trim(&state)
        }
    }

    /// The next message to send: events first, then states.
    public func next() -> Item? {
        state.withLock { state in
            if !state.fifo.isEmpty { return state.fifo.removeFirst() }
            guard !state.latestOrder.isEmpty else { return nil }
            let topic = state.latestOrder.removeFirst()
            return state.latest.removeValue(forKey: topic).map { .message($0) }
        }
    }

    public var isEmpty: Bool { state.withLock { $0.fifo.isEmpty && $0.latestOrder.isEmpty } }

    public var counts: Counts {
        state.withLock { Counts(events: $0.fifo.count, states: $0.latestOrder.count, dropped: $0.dropped) }
    }

    private func trim(_ state: inout State) {
        let excess = state.fifo.count - capacity
        guard excess > 0 else { return }
        state.fifo.removeFirst(excess)
        state.dropped += UInt64(excess)
    }
}
