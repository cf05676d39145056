import Foundation

/// Finds the project's own files (config/demo-template.png, web/) when
/// the server is started from another directory, as a service manager
/// would: a relative path is tried against the working directory, then
/// against each folder above the executable (the binary lives in
/// .build/<triple>/release inside the source tree, or beside an installed
/// share folder).
public enum ResourceLocator {
    public static func locate(_ path: String, executable: String = CommandLine.arguments.first ?? "") -> String {
        if path.hasPrefix("/") || FileManager.default.fileExists(atPath: path) { return path }
        var folder = URL(fileURLWithPath: Self.realPath(executable) ?? executable).deletingLastPathComponent()
        for _ in 0..<6 {
            for base in [folder, folder.appendingPathComponent("share/sightline")] {
                let candidate = base.appendingPathComponent(path).path
                if FileManager.default.fileExists(atPath: candidate) { return candidate }
            }
            folder.deleteLastPathComponent()
        }
        return path
    }

    /// The path with symbolic links and `.`/`..` resolved (realpath(3)); nil
    /// when it does not exist.
    public static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
