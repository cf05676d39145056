import Foundation

/// Keeps uploaded templates in `<data-dir>/templates/`: one PNG per
/// template and `index.json` with names, thresholds and creation times.
/// Every file is written whole (temporary file, then rename), the image
/// before the index, so a crash leaves the old state or the new one.
///
/// Threads: called on the lws service thread (uploads) and at start;
/// `lock` serialises writers.
public final class TemplateStore: @unchecked Sendable {
    struct Entry: Codable, Equatable {
        var name: String
        var threshold: Double
        var createdAt: Double
        var file: String
    }

    public let directory: String
    private let lock = NSLock()

    public init(dataDirectory: String) {
        directory = (dataDirectory as NSString).appendingPathComponent("templates")
    }

    private var indexPath: String { (directory as NSString).appendingPathComponent("index.json") }

    /// The stored templates; an unreadable entry is skipped and reported.
    public func load() throws -> (templates: [Template], problems: [String]) {
        try lock.withLock {
            guard let data = FileManager.default.contents(atPath: indexPath) else { return ([], []) }
            let entries = try JSONDecoder().decode([Entry].self, from: data)
            var templates: [Template] = []
            var problems: [String] = []
            for entry in entries {
                do {
                    let image = try ImageIO.read(path: (directory as NSString).appendingPathComponent(entry.file))
                    templates.append(try Template(name: entry.name, image: image, threshold: entry.threshold,
                                                  createdAt: Date(timeIntervalSince1970: entry.createdAt)))
                } catch {
                    problems.append("\(entry.name): \(error)")
                }
            }
            return (templates, problems)
        }
    }

    /// Writes the image of `changed` (when given) and the index for all `templates`.
    public func save(_ templates: [Template], writingImageOf changed: Template? = nil) throws {
        try lock.withLock {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            if let changed {
                let file = (directory as NSString).appendingPathComponent(Self.fileName(changed.name))
                try AtomicFile.write(try ImageIO.encode(changed.image, as: ".png"), to: file)
            }
            let entries = templates.map {
                Entry(name: $0.name, threshold: $0.threshold, createdAt: $0.createdAt.timeIntervalSince1970,
                      file: Self.fileName($0.name))
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try AtomicFile.write(try encoder.encode(entries), to: indexPath)
            // Images no template refers to any more.
            let wanted = Set(entries.map(\.file))
            for file in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            where file.hasSuffix(".png") && !file.hasPrefix(".") && !wanted.contains(file) {
                unlink((directory as NSString).appendingPathComponent(file))
            }
        }
    }

    /// Names are checked before they get here (TemplateName), so they are safe as file names.
    static func fileName(_ name: String) -> String {
        name.replacingOccurrences(of: " ", with: "_") + ".png"
    }
}
