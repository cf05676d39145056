import Foundation

/// Runs independent stages side by side on one frame (template matching
/// and face detection use a core each), then merges their detections in
/// the stages' order. Each child's time is recorded under its own name.
///
/// Threads: owned by the pipeline; during `process` each child runs on a
/// Dispatch worker, but only one frame is ever in flight, so each child is
/// still used by one thread at a time.
public final class ConcurrentStages: PipelineStage, @unchecked Sendable {
    public let stage: StageName? = nil
    private let children: [PipelineStage]
    private let stats: PipelineStats

    public init(_ children: [PipelineStage], stats: PipelineStats) {
        self.children = children
        self.stats = stats
    }

    public func process(_ context: inout FrameContext) throws {
        guard children.count > 1 else {
            for child in children { try timed(child, &context) }
            return
        }
        let results = ResultSlots(count: children.count)
        let input = context
        DispatchQueue.concurrentPerform(iterations: children.count) { index in
            var local = input
            local.detections = []
            do {
                try timed(children[index], &local)
                results.set(index, .success(local.detections))
            } catch {
                results.set(index, .failure(error))
            }
        }
        for result in results.all {
            context.detections += try result.get()
        }
    }

    private func timed(_ child: PipelineStage, _ context: inout FrameContext) throws {
        let start = MonotonicClock.nanos()
        try child.process(&context)
        if let name = child.stage { stats.stage(name, seconds: Double(MonotonicClock.nanos() - start) / 1e9) }
    }
}

/// One result per child, written from the workers under a lock.
private final class ResultSlots: @unchecked Sendable {
    private let lock = NSLock()
    private var slots: [Result<[Detection], Error>]
    init(count: Int) { slots = Array(repeating: .success([]), count: count) }
    func set(_ index: Int, _ value: Result<[Detection], Error>) { lock.withLock { slots[index] = value } }
    var all: [Result<[Detection], Error>] { lock.withLock { slots } }
}
