import Foundation
import SightlinePipeline
import SightlineHTTP

/// What a template may be called: 1-64 letters, digits, spaces, '-', '_'
/// or '.', not starting with '.' or a space, so it is safe in a URL and as
/// a file name.
public enum TemplateName {
    public static let maximumLength = 64

    /// nil when fine; otherwise what is wrong.
    public static func problem(with name: String) -> String? {
        if name.isEmpty { return "the name is empty" }
        if name.count > maximumLength { return "the name is longer than \(maximumLength) characters" }
        if name.hasPrefix(".") || name.hasPrefix(" ") || name.hasSuffix(" ") {
            return "the name may not start with '.' or start or end with a space"
        }
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: " -_."))
        if name.unicodeScalars.contains(where: { !allowed.contains($0) || !$0.isASCII }) {
            return "use only letters, digits, spaces, '-', '_' and '.' (no '/', '\\\\' or other path characters)"
        }
        return nil
    }
}
