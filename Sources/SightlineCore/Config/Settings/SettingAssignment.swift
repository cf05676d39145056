import Foundation

/// One value the config file gives, already read and checked for its type:
/// applying it sets its setting. A camera's overrides are a list of these,
/// each of a `.camera` setting, applied to its `CameraSettings`.
public struct SettingAssignment: Sendable {
    /// The setting's key (`faces.maxRate`).
    public let key: String
    public let scope: SettingDefinition.Scope
    private let set: @Sendable (inout ServeSettings) -> Void
    private let setCamera: (@Sendable (inout CameraSettings) -> Void)?

    init(key: String, scope: SettingDefinition.Scope, set: @escaping @Sendable (inout ServeSettings) -> Void,
         setCamera: (@Sendable (inout CameraSettings) -> Void)?) {
        self.key = key
        self.scope = scope
        self.set = set
        self.setCamera = setCamera
    }

    /// Sets it in the top level's settings (the server's or the top level's camera settings).
    public func apply(to settings: inout ServeSettings) {
        set(&settings)
    }

    /// Sets it in one camera's settings; a server setting (which the config
    /// reader never gives a camera) sets nothing.
    public func apply(to camera: inout CameraSettings) {
        setCamera?(&camera)
    }
}
