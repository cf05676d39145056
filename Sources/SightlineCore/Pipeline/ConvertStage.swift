import Foundation

/// Makes the gray frame and its shrunk copy that the detectors share.
public final class ConvertStage: PipelineStage {
    public let stage = StageName.convert
    private let matcher: TemplateMatcher

    public init(matcher: TemplateMatcher) { self.matcher = matcher }

    public func process(_ context: inout FrameContext) throws {
        let gray = try ImageOps.gray(context.frame.image)
        context.gray = gray
        context.smallGray = try matcher.shrink(gray: gray)
    }
}
