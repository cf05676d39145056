import Foundation
import SightlineVision
import SightlineSupport

/// What the stages know about the frame in hand; lives on the pipeline thread.
///
/// The stages analyse `image`: the frame itself, or the convert stage's copy
/// at the detection size (`AnalysisSize`) when the frame is larger. Every
/// detection is normalized to `image`, which has the frame's proportions, so
/// its box fits the full picture unchanged; pixels of `image` (a face
/// tracker's, a matcher's) never leave the stages.
public struct FrameContext: Sendable {
    public let frame: Frame
    /// The picture the stages analyse: `frame.image`, or its copy at the
    /// detection size (set by the convert stage; until then the full frame,
    /// whose BGR pixels are made only when this is first read).
    public var image: ImageBuffer {
        get { analysed ?? frame.image }
        set { analysed = newValue }
    }
    private var analysed: ImageBuffer?
    /// The analysed picture in gray (of `image`), made once by the convert stage.
    public var gray: ImageBuffer?
    public var detections: [Detection] = []
    /// Seconds each named stage took on this frame.
    public var stageSeconds: [StageName: Double] = [:]

    public init(frame: Frame) {
        self.frame = frame
    }

    /// `image`'s width over the frame's: 1 when the frame is analysed as it is.
    public var analysisScale: Double { Double(analysed?.width ?? frame.width) / Double(max(1, frame.width)) }
}

/// One step of the pipeline. A stage belongs to the thread that runs its
/// pipeline (ConcurrentStages lends it to one worker at a time while a frame
/// is in flight), so it is never used by two threads at once.
public protocol PipelineStage: AnyObject {
    /// The name its time is kept under (nil: a stage that times its own parts).
    var stage: StageName? { get }
    func process(_ context: inout FrameContext) throws
    /// The names of the stages it runs, in order.
    var names: [String] { get }
    /// Ends any thread of its own and waits for it (called once the
    /// pipeline's thread is done with the stage).
    func stop()
}

extension PipelineStage {
    public var names: [String] { stage.map { [$0.rawValue] } ?? [] }
    public func stop() {}

    /// Runs the stage and keeps its time in the context under its name.
    package func run(_ context: inout FrameContext) throws {
        let start = MonotonicClock.nanos()
        try process(&context)
        if let stage { context.stageSeconds[stage] = Double(MonotonicClock.nanos() - start) / 1e9 }
    }
}
