import Foundation

/// The set of templates in use. Written by the server (uploads) or at start,
/// read by the pipeline once per frame; guarded by `lock`, so a change takes
/// effect on the next processed frame.
public final class TemplateLibrary: @unchecked Sendable {
    private let lock = NSLock()
    private var templates: [Template] = []

    public init(_ templates: [Template] = []) { self.templates = templates }

    public var all: [Template] { lock.withLock { templates } }

    /// Adds or replaces the template of the same name.
    public func put(_ template: Template) {
        lock.withLock {
            templates.removeAll { $0.name == template.name }
            templates.append(template)
        }
    }

    @discardableResult
    public func remove(named name: String) -> Bool {
        lock.withLock {
            let before = templates.count
            templates.removeAll { $0.name == name }
            return templates.count != before
        }
    }
}
