import Foundation
import SightlineVision
import SightlineSupport
import SightlinePipeline
import SightlineHTTP
import SightlineEvents

/// The server's settings (`SettingsCatalog`'s `.server` scope): listening,
/// access, TLS, the data directory, logging, media folders, JPEG and H.264
/// encoding, recording, MQTT and OpenCV's threads. One for the process; no
/// camera sets any of them (`CameraSettings` are a camera's).
public struct ServerSettings: Sendable {
    public var host = "127.0.0.1"
    public var port = 8080
    public var webRoot = "web"
    public var jpegQuality = 80
    /// The JPEG stream's widest (`video.jpegMaxWidth`): a wider frame is
    /// scaled down to it, proportions kept, before it is encoded for JPEG
    /// viewers, `/stream.mjpg` and snapshots (`?full=1` asks for the full
    /// picture; an MJPEG source's own JPEG goes as it is). 0: full size. Why 1280: `JPEGSizeRule`.
    public var jpegMaxWidth = JPEGSizeRule.defaultMaxWidth
    /// Threads OpenCV's own parallel loops may use (`OpenCVThreads`); 1 runs
    /// each call on the thread that makes it.
    public var opencvThreads = 1
    public var dataDir = "data"
    public var token: String?
    public var logLevel = "info"
    public var debugStageDelayMs = 0.0
    /// Folders whose files an admin may add as a camera or switch to (`media:`,
    /// `--media-dir`); the folders of the config's own files count too (`SourcePolicy`).
    public var mediaFolders: [String] = []
    /// Viewing without a credential: nil decides by the address (open on
    /// loopback, closed elsewhere); true/false force it (`access.view`).
    public var viewOpen: Bool?
    /// Origins besides the server's own that may open /ws and make changes.
    public var allowedOrigins: [String] = []
    /// Host names besides localhost and the loopback addresses a loopback-bound server answers to.
    public var allowedHosts: [String] = []
    public var sessionMinutes = 12 * 60.0
    /// Reverse proxies whose forwarded client address counts (`access.trustedProxies`; see `TrustedProxies`).
    public var trustedProxies: [String] = []
    /// TLS: PEM files, or `tlsAuto` for a self-signed certificate in <data-dir>/tls.
    public var tlsCert: String?
    public var tlsKey: String?
    public var tlsAuto = false
    public var record = RecordSettings()
    public var mqtt = MQTTSettings()
    /// H.264 on `/ws?video=h264` (config `video:`).
    public var video = VideoSettings()

    public init() {}

    /// Whether viewing needs no credential with these settings.
    public var viewingIsOpen: Bool { viewOpen ?? ServeSettings.isLoopback(host) }

    public var tlsEnabled: Bool { tlsAuto || tlsCert != nil }
}
