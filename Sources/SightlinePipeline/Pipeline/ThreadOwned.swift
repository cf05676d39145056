import Foundation
import SightlineVision

/// A non-Sendable value that one thread hands to another, under a discipline
/// the compiler cannot see: the two never use it at the same time.
/// `@unchecked Sendable` by that discipline, which each use states:
/// - `ThreadedSink` hands its consumer to the sink's thread at start and
///   never touches it again on any other thread;
/// - `ConcurrentStages` lends each child stage to exactly one Dispatch worker
///   while the pipeline thread waits in `concurrentPerform`.
final class ThreadOwned<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
