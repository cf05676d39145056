import Foundation
import SightlineSupport

/// Serves the client from the web root. A path that climbs out of the root
/// (`..`, encoded or not) or resolves through a link to a file outside it
/// is refused with 403; anything else missing is 404.
public struct StaticFiles: Sendable {
    public let root: String
    private let resolvedRoot: String

    static let contentTypes: [String: String] = [
        "html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8",
        "mjs": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8",
        "json": "application/json", "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg",
        "svg": "image/svg+xml", "ico": "image/x-icon", "txt": "text/plain; charset=utf-8",
        "webmanifest": "application/manifest+json",
    ]

    public init(root: String) {
        self.root = root
        resolvedRoot = ResourceLocator.realPath(root) ?? root
    }

    public func response(for path: String) -> HTTPResponse {
        let decoded = path.removingPercentEncoding ?? path
        let segments = decoded.split(separator: "/", omittingEmptySubsequences: true)
        if decoded.contains("\0") || decoded.contains("\\") || segments.contains(where: { $0 == ".." || $0 == "." }) {
            return .error(403, "forbidden", detail: "the path leaves the web root")
        }
        let relative = segments.isEmpty ? "index.html" : segments.joined(separator: "/")
        let candidate = resolvedRoot + "/" + relative
        guard let resolved = ResourceLocator.realPath(candidate) else {
            return .error(404, "not found", detail: "no such file: /\(relative)")
        }
        guard resolved.hasPrefix(resolvedRoot + "/") else {
            return .error(403, "forbidden", detail: "the path leaves the web root")
        }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: resolved, isDirectory: &isDirectory), isDirectory.boolValue {
            return response(for: "/" + relative + "/index.html")
        }
        guard let data = FileManager.default.contents(atPath: resolved) else {
            return .error(404, "not found", detail: "cannot read /\(relative)")
        }
        let ext = (resolved as NSString).pathExtension.lowercased()
        return .data(data, contentType: Self.contentTypes[ext] ?? "application/octet-stream",
                     headers: [("cache-control:", "no-cache")])
    }

}
