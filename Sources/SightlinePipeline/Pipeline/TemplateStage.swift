import Foundation
import SightlineVision

/// Looks for every template of the library in the frame (a template out of
/// view is looked for a few times a second: TemplateMatcher.lostSearchInterval).
///
/// A template is an image cut from the full picture, so on a frame analysed
/// at a smaller size (`AnalysisSize`) it is looked for at that size too:
/// scaled by the same factor as the frame, once (kept while the factor and
/// the template stay), so the matcher's scales keep their meaning (1: the
/// template's size in the full picture) and its tracks keep their template.
public final class TemplateStage: PipelineStage {
    public let stage: StageName? = .template
    private let matcher: TemplateMatcher
    private let library: TemplateLibrary
    /// Each template scaled to the analysed picture, by the template and the copy's width.
    private var scaled: [ScaledKey: (source: Template, scaled: Template)] = [:]

    private struct ScaledKey: Hashable {
        let template: ObjectIdentifier
        let frameWidth: Int
        let analysedWidth: Int
    }

    public init(matcher: TemplateMatcher, library: TemplateLibrary) {
        self.matcher = matcher
        self.library = library
    }

    public func process(_ context: inout FrameContext) throws {
        var templates = library.all
        guard !templates.isEmpty else { return }
        let gray = try context.gray ?? ImageOps.gray(context.image)
        if context.image.width != context.frame.width {
            templates = try scale(templates, from: context.frame.width, to: context.image.width)
        } else if !scaled.isEmpty {
            scaled = [:]
        }
        context.detections += try matcher.match(templates: templates, gray: gray, at: context.frame.capturedAt)
    }

    /// The templates at the analysed picture's scale (`analysedWidth / frameWidth`).
    private func scale(_ templates: [Template], from frameWidth: Int, to analysedWidth: Int) throws -> [Template] {
        let factor = Double(analysedWidth) / Double(frameWidth)
        var kept: [ScaledKey: (source: Template, scaled: Template)] = [:]
        let result = try templates.map { template in
            let key = ScaledKey(template: ObjectIdentifier(template), frameWidth: frameWidth, analysedWidth: analysedWidth)
            // (The source is kept and compared: a new template may be given a freed one's address.)
            if let done = scaled[key], done.source === template {
                kept[key] = done
                return done.scaled
            }
            let width = max(1, Int((Double(template.image.width) * factor).rounded()))
            let height = max(1, Int((Double(template.image.height) * factor).rounded()))
            let image = try ImageOps.resized(template.image, width: width, height: height, interpolation: .area)
            let made = try Template(name: template.name, image: image, threshold: template.threshold,
                                    createdAt: template.createdAt)
            kept[key] = (template, made)
            return made
        }
        // Templates removed from the library (or scaled for another size) go.
        scaled = kept
        return result
    }
}
