import Foundation
import Synchronization
import SightlineVision
import SightlineSupport
import SightlinePipeline
import SightlineHTTP

/// Keeps uploaded templates in `<data-dir>/templates/`: one PNG per
/// template and `index.json` with names, thresholds and creation times.
/// Every file is written whole (temporary file, then rename), the image
/// before the index, so a crash leaves the old state or the new one; at
/// start, what a crash left behind (temporary files, images no index entry
/// names) is removed.
///
/// Threads: called on the RequestWorker (uploads, changes) and at start;
/// the `writing` mutex serialises them.
public final class TemplateStore: Sendable {
    struct Entry: Codable, Equatable {
        var name: String
        var threshold: Double
        var createdAt: Double
        var file: String
    }

    public let directory: String
    private let writing = Locked(())

    public init(dataDirectory: String) {
        directory = (dataDirectory as NSString).appendingPathComponent("templates")
    }

    private var indexPath: String { (directory as NSString).appendingPathComponent("index.json") }

    /// The stored templates; an unreadable entry is skipped and reported.
    /// Leftovers of an interrupted write are removed and named in `removed`;
    /// images stored under an earlier version's file names (where `my logo`
    /// and `my_logo` shared one file) are moved to their own names.
    public func load() throws -> (templates: [Template], problems: [String], removed: [String]) {
        try writing.withLock { _ in
            guard let data = FileManager.default.contents(atPath: indexPath) else {
                return ([], [], removeLeftovers(keeping: []))
            }
            var entries = try JSONDecoder().decode([Entry].self, from: data)
            var migrated = false
            for index in entries.indices where entries[index].file != Self.fileName(entries[index].name) {
                let old = (directory as NSString).appendingPathComponent(entries[index].file)
                let new = (directory as NSString).appendingPathComponent(Self.fileName(entries[index].name))
                if let image = FileManager.default.contents(atPath: old) {
                    try AtomicFile.write(image, to: new)
                    entries[index].file = Self.fileName(entries[index].name)
                    migrated = true
                }
            }
            if migrated { try writeIndex(entries) }
            let removed = removeLeftovers(keeping: Set(entries.map(\.file)))
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
            return (templates, problems, removed)
        }
    }

    /// Writes the image of `changed` (when given) and the index for all
    /// `templates`. A failed write throws a `StorageError`.
    public func save(_ templates: [Template], writingImageOf changed: Template? = nil) throws {
        try writing.withLock { _ in
            try AtomicFile.makeDirectory(directory)
            if let changed {
                let file = (directory as NSString).appendingPathComponent(Self.fileName(changed.name))
                try AtomicFile.write(try ImageIO.encode(changed.image, as: ".png"), to: file)
            }
            let entries = templates.map {
                Entry(name: $0.name, threshold: $0.threshold, createdAt: $0.createdAt.timeIntervalSince1970,
                      file: Self.fileName($0.name))
            }
            try writeIndex(entries)
            _ = removeLeftovers(keeping: Set(entries.map(\.file)))
        }
    }

    private func writeIndex(_ entries: [Entry]) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try AtomicFile.write(try encoder.encode(entries), to: indexPath)
    }

    /// Removes temporary files and images no entry names; returns their names.
    private func removeLeftovers(keeping wanted: Set<String>) -> [String] {
        var removed: [String] = []
        for file in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            let leftover = file.contains(".tmp-") || (file.hasSuffix(".png") && !wanted.contains(file))
            if leftover && unlink((directory as NSString).appendingPathComponent(file)) == 0 { removed.append(file) }
        }
        return removed.sorted()
    }

    /// One file per name: names are checked before they get here (TemplateName:
    /// letters, digits, space, '-', '_', '.'), and the space, the only one
    /// that is awkward in a file name, becomes "%20" (not "_", which a name
    /// may hold itself).
    static func fileName(_ name: String) -> String {
        name.replacingOccurrences(of: " ", with: "%20") + ".png"
    }
}
