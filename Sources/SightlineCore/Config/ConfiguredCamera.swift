import Foundation

/// One camera as it runs: its name in routes, its data directory and its
/// own settings (`CameraSettings`: the top level's with what `cameras:`, the
/// runtime roster or `POST /api/cameras` set for it). It holds no server
/// setting: no host, port, token or encoder; a camera is built with the
/// server's `ServerSettings` beside it (`CameraUnit`, `CameraAssembly`).
@dynamicMemberLookup
public struct ConfiguredCamera: Sendable {
    /// Its name in routes (`/cam/NAME/...`, `/api/cameras/NAME/...`).
    public var routeName: String
    /// `<dataDir>/cameras/NAME` (templates, people, events, recordings); the
    /// server's data directory for the one camera without `cameras:`.
    public var dataDir: String
    public var settings: CameraSettings

    public init(routeName: String, dataDir: String, settings: CameraSettings) {
        self.routeName = routeName
        self.dataDir = dataDir
        self.settings = settings
    }

    /// The camera name events and topics use: `camera`, else the host name (`ServeSettings.hostCameraName`).
    public var cameraName: String { settings.camera ?? ServeSettings.hostCameraName() }

    /// `camera.source` for `camera.settings.source`.
    public subscript<T>(dynamicMember path: WritableKeyPath<CameraSettings, T>) -> T {
        get { settings[keyPath: path] }
        set { settings[keyPath: path] = newValue }
    }

    public subscript<T>(dynamicMember path: KeyPath<CameraSettings, T>) -> T {
        settings[keyPath: path]
    }
}
