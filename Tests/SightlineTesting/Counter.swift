import Synchronization

/// A count shared between threads.
package final class Counter: Sendable {
    private let count = Atomic<Int>(0)
    package init() {}
    package func add() { count.add(1, ordering: .relaxed) }
    package var value: Int { count.load(ordering: .relaxed) }
}
