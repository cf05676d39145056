import Foundation

public enum ConfigError: Error, CustomStringConvertible, Equatable {
    case unreadable(String)
    case malformed(String, String)
    case invalid(String)

    public var description: String {
        switch self {
        case .unreadable(let path): return "cannot read the config file \(path)"
        case .malformed(let path, let why): return "config file \(path): \(why)"
        case .invalid(let why): return why
        }
    }
}
