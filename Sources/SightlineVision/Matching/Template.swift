import Foundation

/// A named image to look for, with its own acceptance threshold.
/// Immutable once made (every field a `let` of a Sendable type), so it is
/// shared freely between threads.
public final class Template: Sendable {
    public let name: String
    public let threshold: Double
    /// The image as loaded (BGR) and its gray version, which matching uses.
    public let image: ImageBuffer
    public let gray: ImageBuffer
    public let createdAt: Date

    public init(name: String, image: ImageBuffer, threshold: Double = TemplateMatcher.Options.defaultThreshold,
                createdAt: Date = Date()) throws {
        self.name = name
        self.threshold = threshold
        self.image = image
        self.gray = try ImageOps.gray(image)
        self.createdAt = createdAt
    }

    /// The same template with another threshold.
    public func with(threshold: Double) throws -> Template {
        try Template(name: name, image: image, threshold: threshold, createdAt: createdAt)
    }

    /// Loads `PATH` or `PATH=NAME` (the name defaults to the file's base name).
    public static func load(argument: String) throws -> Template {
        let (path, name) = parse(argument: argument)
        return try Template(name: name, image: ImageIO.read(path: path))
    }

    public static func parse(argument: String) -> (path: String, name: String) {
        if let equals = argument.lastIndex(of: "="), argument[argument.index(after: equals)...].allSatisfy({ $0 != "/" }) {
            let name = String(argument[argument.index(after: equals)...])
            if !name.isEmpty { return (String(argument[..<equals]), name) }
        }
        let base = (argument as NSString).lastPathComponent
        return (argument, (base as NSString).deletingPathExtension)
    }
}
