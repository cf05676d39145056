import Foundation
import SightlineVision

/// Makes the picture the detectors share: the frame, or its copy at the
/// detection size when it is larger (`AnalysisSize`), and that picture in gray.
public final class ConvertStage: PipelineStage {
    public let stage: StageName? = .convert
    public let analysisSize: AnalysisSize

    /// `analysisSize` 0: every frame at its own size (`sightline detect`'s photos).
    public init(analysisSize: AnalysisSize = AnalysisSize(longSide: 0)) {
        self.analysisSize = analysisSize
    }

    public func process(_ context: inout FrameContext) throws {
        context.image = try analysisSize.analysed(context.frame.picture)
        context.gray = try ImageOps.gray(context.image)
    }
}
