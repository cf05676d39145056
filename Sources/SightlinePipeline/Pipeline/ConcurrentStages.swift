import Foundation
import SightlineSupport
import Synchronization
import SightlineVision

/// Runs independent stages side by side on one frame (template matching
/// and face detection use a core each), then merges their detections in
/// the stages' order. Each child's time is kept under its own name.
///
/// Threads: owned by the pipeline; during `process` each child runs on a
/// Dispatch worker, but only one frame is ever in flight, so each child is
/// still used by one thread at a time.
public final class ConcurrentStages: PipelineStage {
    public let stage: StageName? = nil
    private let children: [PipelineStage]

    public init(_ children: [PipelineStage]) {
        self.children = children
    }

    public var names: [String] { children.flatMap(\.names) }

    public func stop() { children.forEach { $0.stop() } }

    public func process(_ context: inout FrameContext) throws {
        guard children.count > 1 else {
            for child in children { try child.run(&context) }
            return
        }
        let results = ResultSlots(count: children.count)
        let input = context
        let lent = ThreadOwned(children)
        DispatchQueue.concurrentPerform(iterations: children.count) { index in
            var local = input
            local.detections = []
            local.stageSeconds = [:]
            do {
                try lent.value[index].run(&local)
                results.set(index, .success(local))
            } catch {
                results.set(index, .failure(error))
            }
        }
        for result in results.all {
            let child = try result.get()
            context.detections += child.detections
            context.stageSeconds.merge(child.stageSeconds) { $1 }
        }
    }
}

/// One result per child, written from the workers.
private final class ResultSlots: Sendable {
    private let slots: Locked<[Result<FrameContext, Error>]>
    init(count: Int) { slots = Locked(Array(repeating: .failure(CancellationError()), count: count)) }
    func set(_ index: Int, _ value: Result<FrameContext, Error>) { slots.withLock { $0[index] = value } }
    var all: [Result<FrameContext, Error>] { slots.withLock { $0 } }
}
