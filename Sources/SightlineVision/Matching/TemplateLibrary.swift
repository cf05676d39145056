import Foundation
import SightlineSupport
import Synchronization

/// The set of templates in use. Written by the HTTP side (uploads) or at
/// start, read by the pipeline once per frame; in a `Mutex`, so a change
/// takes effect on the next processed frame.
public final class TemplateLibrary: Sendable {
    private let templates: Locked<[Template]>

    public init(_ templates: [Template] = []) { self.templates = Locked(templates) }

    public var all: [Template] { templates.withLock { $0 } }

    /// Adds or replaces the template of the same name.
    public func put(_ template: Template) {
        templates.withLock { templates in
            templates.removeAll { $0.name == template.name }
            templates.append(template)
        }
    }

    @discardableResult
    public func remove(named name: String) -> Bool {
        templates.withLock { templates in
            let before = templates.count
            templates.removeAll { $0.name == name }
            return templates.count != before
        }
    }
}
