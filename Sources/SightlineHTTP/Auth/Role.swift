import Foundation

/// What a credential may do. `viewer`: streams, snapshots, state, metrics,
/// lists and thumbnails. `admin`: everything, including uploads, naming
/// faces, switching sources and changing settings.
public enum Role: String, Codable, Sendable, CaseIterable, Comparable {
    case viewer, admin

    /// Whether this role may make a call that needs `needed`.
    public func allows(_ needed: Role) -> Bool { self >= needed }

    public static func < (a: Role, b: Role) -> Bool { a.rank < b.rank }
    private var rank: Int { self == .viewer ? 0 : 1 }
}

/// Who a request proved to be: a named token and its role.
public struct Credential: Sendable, Equatable, Hashable {
    public var name: String
    public var role: Role

    public init(name: String, role: Role) {
        self.name = name
        self.role = role
    }
}
