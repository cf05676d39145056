import Foundation
import SightlineSupport
import Synchronization

/// What waits to be published on the one broker connection, bounded
/// whatever the broker does, in lanes: one per camera (its name) and one for
/// the server (`serverLane`: availability and stats). In each lane:
/// - event messages in order; all lanes together hold at most `capacity`:
///   when full, the oldest event of the lane holding the most is dropped and
///   counted (a camera flooding events drops its own, not another's; after
///   an outage the newest events go out);
/// - state messages (counts, snapshots, stats, discovery), newest per
///   topic: a newer value replaces one not yet sent, so they are bounded by
///   the number of topics and never dropped.
/// `next` takes the lanes in turns (one message from each lane that has
/// something, then round again), events before states within a lane, so one
/// camera's flood never holds back another camera's state topics.
///
/// Threads: pushes from the pipeline threads (and others), `next` and
/// `requeue` from the publisher's thread; all in one `Mutex`. Each push
/// calls `wake` (outside the lock) so the publisher sends at once.
public final class MQTTOutbox: Sendable {
    public enum Item: Sendable, Equatable {
        /// Formatted on the publisher's thread, off the pipeline; `clips`: the camera records clips.
        case event(EventChange.Kind, before: EventRecord, after: EventRecord, clips: Bool)
        case message(MQTTMessage)
    }

    /// An item and the lane it came from.
    public struct Entry: Sendable, Equatable {
        public var lane: String
        public var item: Item
    }

    public struct Counts: Codable, Sendable, Equatable {
        /// Event messages waiting.
        public var events = 0
        /// State topics waiting.
        public var states = 0
        /// Event messages dropped because `capacity` were waiting.
        public var dropped: UInt64 = 0
    }

    /// The server's own lane (availability, stats).
    public static let serverLane = ""

    private struct Lane {
        var fifo: [Item] = []
        var latest: [String: MQTTMessage] = [:]
        var latestOrder: [String] = []
        var isEmpty: Bool { fifo.isEmpty && latestOrder.isEmpty }
    }

    private struct State {
        var lanes: [String: Lane] = [:]
        /// Lanes with something waiting, in turn order; `next` serves `rotation[cursor]`.
        var rotation: [String] = []
        var cursor = 0
        var events = 0
        var states = 0
        var dropped: UInt64 = 0

        mutating func change(_ name: String, _ body: (inout Lane) -> Void) {
            var lane = lanes[name] ?? Lane()
            let wasEmpty = lane.isEmpty
            let before = (lane.fifo.count, lane.latestOrder.count)
            body(&lane)
            events += lane.fifo.count - before.0
            states += lane.latestOrder.count - before.1
            if lane.isEmpty {
                lanes.removeValue(forKey: name)
                if !wasEmpty, let index = rotation.firstIndex(of: name) {
                    rotation.remove(at: index)
                    if index < cursor { cursor -= 1 }
                    if cursor >= rotation.count { cursor = 0 }
                }
            } else {
                lanes[name] = lane
                if wasEmpty { rotation.append(name) }
            }
        }
    }

    public let capacity: Int
    private let state = Locked(State())
    private let wake: @Sendable () -> Void

    public init(capacity: Int, wake: @escaping @Sendable () -> Void = {}) {
        self.capacity = max(1, capacity)
        self.wake = wake
    }

    /// An event message, after those waiting in its lane (any thread, never waits).
    public func push(_ item: Item, lane: String = MQTTOutbox.serverLane) {
        state.withLock { state in
            state.change(lane) { $0.fifo.append(item) }
            trim(&state)
        }
        wake()
    }

    /// A state message: replaces a waiting one of the same topic.
    public func pushState(_ message: MQTTMessage, lane: String = MQTTOutbox.serverLane) {
        state.withLock { state in
            state.change(lane) { lane in
                if lane.latest.updateValue(message, forKey: message.topic) == nil { lane.latestOrder.append(message.topic) }
            }
        }
        wake()
    }

    /// A state message, unless a newer one of that topic is waiting (a republish after reconnecting).
    public func pushStateIfAbsent(_ message: MQTTMessage, lane: String = MQTTOutbox.serverLane) {
        state.withLock { state in
            state.change(lane) { lane in
                guard lane.latest[message.topic] == nil else { return }
                lane.latest[message.topic] = message
                lane.latestOrder.append(message.topic)
            }
        }
        wake()
    }

    /// Messages handed out but not acknowledged when the connection was
    /// lost, back in front of their lanes in their order (the oldest dropped if full).
    public func requeue(_ entries: [Entry]) {
        guard !entries.isEmpty else { return }
        state.withLock { state in
            var byLane: [String: [Item]] = [:]
            var order: [String] = []
            for entry in entries {
                if byLane[entry.lane] == nil { order.append(entry.lane) }
                byLane[entry.lane, default: []].append(entry.item)
            }
            for name in order {
                state.change(name) { $0.fifo.insert(contentsOf: byLane[name] ?? [], at: 0) }
            }
            trim(&state)
        }
    }

    /// State topics waiting in `lane` (a camera being removed: what it has not sent yet).
    public func waitingStateTopics(lane: String) -> [String] {
        state.withLock { $0.lanes[lane]?.latestOrder ?? [] }
    }

    /// The next message to send: lanes in turns, events before states within one.
    public func next() -> Entry? {
        state.withLock { state -> Entry? in
            guard !state.rotation.isEmpty else { return nil }
            if state.cursor >= state.rotation.count { state.cursor = 0 }
            let name = state.rotation[state.cursor]
            var taken: Item?
            state.change(name) { lane in
                if !lane.fifo.isEmpty {
                    taken = lane.fifo.removeFirst()
                } else if !lane.latestOrder.isEmpty {
                    let topic = lane.latestOrder.removeFirst()
                    taken = lane.latest.removeValue(forKey: topic).map { .message($0) }
                }
            }
            // The lane keeps its place if it still waits: the turn goes to the one after it.
            if state.rotation.indices.contains(state.cursor), state.rotation[state.cursor] == name {
                state.cursor = (state.cursor + 1) % state.rotation.count
            }
            return taken.map { Entry(lane: name, item: $0) }
        }
    }

    public var isEmpty: Bool { state.withLock { $0.rotation.isEmpty } }

    public var counts: Counts {
        state.withLock { Counts(events: $0.events, states: $0.states, dropped: $0.dropped) }
    }

    /// Over capacity: the oldest event of the fullest lane goes, until it fits.
    private func trim(_ state: inout State) {
        while state.events > capacity {
            guard let fullest = state.rotation.max(by: {
                (state.lanes[$0]?.fifo.count ?? 0) < (state.lanes[$1]?.fifo.count ?? 0)
            }) else { return }
            state.change(fullest) { $0.fifo.removeFirst() }
            state.dropped += 1
        }
    }
}
