import Foundation

/// What the stages know about the frame in hand; lives on the pipeline thread.
public struct FrameContext: Sendable {
    public let frame: Frame
    /// The frame in gray, made once by the convert stage.
    public var gray: ImageBuffer?
    public var detections: [Detection] = []

    public init(frame: Frame) { self.frame = frame }
}

/// One step of the pipeline. Stages run on the pipeline thread, in order.
public protocol PipelineStage: AnyObject {
    /// The name its time is kept under (nil: a stage that times its own parts).
    var stage: StageName? { get }
    func process(_ context: inout FrameContext) throws
}
