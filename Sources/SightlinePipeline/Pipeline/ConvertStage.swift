import Foundation
import SightlineVision

/// Makes the gray frame that the detectors share.
public final class ConvertStage: PipelineStage {
    public let stage: StageName? = .convert

    public init() {}

    public func process(_ context: inout FrameContext) throws {
        context.gray = try ImageOps.gray(context.frame.image)
    }
}
