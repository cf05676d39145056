import Foundation

/// Checks a person's name as the API receives it.
public enum PersonName {
    public static let maxLength = 64
    /// Characters that would make a name a path or break a URL or a log line.
    static let forbidden = CharacterSet(charactersIn: "/\\").union(.controlCharacters)

    /// The trimmed name, or a 400 saying what is wrong.
    public static func validated(_ raw: String) -> Result<String, FaceServiceError> {
        let name = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !name.isEmpty else {
            return .failure(.badName("the name is empty; send {\"name\": \"Ada\"}"))
        }
        guard name.count <= maxLength else {
            return .failure(.badName("the name has \(name.count) characters; use at most \(maxLength)"))
        }
        guard name.rangeOfCharacter(from: forbidden) == nil, name != ".", name != ".." else {
            return .failure(.badName("the name may not contain '/', '\\' or control characters"))
        }
        return .success(name)
    }
}
