import Foundation

/// One value the config file gives, already read and checked for its type:
/// applying it sets its setting (a camera's overrides are a list of these).
public struct SettingAssignment: Sendable {
    /// The setting's key (`faces.maxRate`).
    public let key: String
    let set: @Sendable (inout ServeSettings) -> Void

    public init(key: String, set: @escaping @Sendable (inout ServeSettings) -> Void) {
        self.key = key
        self.set = set
    }

    public func apply(to settings: inout ServeSettings) {
        set(&settings)
    }
}
