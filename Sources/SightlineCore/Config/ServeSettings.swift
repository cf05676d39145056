import Foundation

/// Everything `serve` needs, resolved from defaults, the config file and
/// flags (in that order of precedence, flags last). Plain values only, kept
/// apart from runtime state.
public struct ServeSettings: Sendable {
    public var host = "127.0.0.1"
    public var port = 8080
    public var webRoot = "web"
    public var source = "auto"
    public var cameraWidth = 640
    public var cameraHeight = 480
    public var cameraFPS = 30.0
    public var demoTemplate = "config/demo-template.png"
    public var jpegQuality = 80
    public var templateThreshold = TemplateMatcher.Options.defaultThreshold
    public var frameScale = TemplateMatcher.Options().frameScale
    public var templates: [String] = []
    public var dataDir = "data"
    public var token: String?
    public var logLevel = "info"
    public var debugStageDelayMs = 0.0

    public init() {}

    /// Applies a config file's values over the current ones.
    public mutating func apply(_ config: SightlineConfig) {
        if let v = config.server?.host { host = v }
        if let v = config.server?.port { port = v }
        if let v = config.server?.webRoot { webRoot = v }
        if let v = config.source?.spec { source = v }
        if let v = config.source?.width { cameraWidth = v }
        if let v = config.source?.height { cameraHeight = v }
        if let v = config.source?.fps { cameraFPS = v }
        if let v = config.demo?.template { demoTemplate = v }
        if let v = config.jpeg?.quality { jpegQuality = v }
        if let v = config.templates?.threshold { templateThreshold = v }
        if let v = config.templates?.frameScale { frameScale = v }
        if let v = config.templates?.paths { templates = v }
        if let v = config.dataDir { dataDir = v }
        if let v = config.token, !v.isEmpty { token = v }
        if let v = config.logLevel { logLevel = v }
    }

    /// Checks ranges; the message names the setting.
    public func validate() throws {
        guard (1...65535).contains(port) else { throw ConfigError.invalid("port must be 1-65535, got \(port)") }
        guard (1...100).contains(jpegQuality) else { throw ConfigError.invalid("jpeg quality must be 1-100, got \(jpegQuality)") }
        guard (0.0...1.0).contains(templateThreshold) else {
            throw ConfigError.invalid("templates.threshold must be 0-1, got \(templateThreshold)")
        }
        guard frameScale > 0.05 && frameScale <= 1 else {
            throw ConfigError.invalid("templates.frameScale must be in (0.05, 1], got \(frameScale)")
        }
        guard cameraWidth > 0, cameraHeight > 0, cameraFPS > 0 else {
            throw ConfigError.invalid("source width, height and fps must be positive")
        }
        guard debugStageDelayMs >= 0 else { throw ConfigError.invalid("--debug-stage-delay-ms must be >= 0") }
        _ = try SourceSpec.parse(source)
    }
}
