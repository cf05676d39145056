import SightlineHTTP

extension AccessPolicy {
    /// The policy the settings ask for: who may view, the loopback binding,
    /// the allowed origins and hosts, TLS.
    public init(settings: ServeSettings) {
        self.init(viewOpen: settings.viewingIsOpen, loopbackBound: ServeSettings.isLoopback(settings.host),
                  allowedOrigins: settings.allowedOrigins, allowedHosts: settings.allowedHosts, tls: settings.tlsEnabled)
    }
}
