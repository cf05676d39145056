import Foundation
import SightlineVision

/// Looks for every template of the library in the frame (a template out of
/// view is looked for a few times a second: TemplateMatcher.lostSearchInterval).
public final class TemplateStage: PipelineStage {
    public let stage: StageName? = .template
    private let matcher: TemplateMatcher
    private let library: TemplateLibrary

    public init(matcher: TemplateMatcher, library: TemplateLibrary) {
        self.matcher = matcher
        self.library = library
    }

    public func process(_ context: inout FrameContext) throws {
        let templates = library.all
        guard !templates.isEmpty else { return }
        let gray = try context.gray ?? ImageOps.gray(context.frame.image)
        context.detections += try matcher.match(templates: templates, gray: gray, at: context.frame.capturedAt)
    }
}
