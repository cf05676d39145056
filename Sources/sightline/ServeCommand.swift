import ArgumentParser
import Foundation
import Logging
import SightlineCore

struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Capture, detect and stream (the default command)."
    )

    @OptionGroup var options: SettingsOptions

    func run() throws {
        let settings = try options.resolveSettings()
        OpenCVThreads.set(settings.opencvThreads)
        let logger = try LogSetup.bootstrap(level: settings.logLevel)
        let server: SightlineServer
        do {
            server = try SightlineServer(settings: settings, logger: logger)
            try server.start()
        } catch {
            logger.critical("cannot start: \(error)")
            throw ExitCode(2)
        }
        waitForTermination(onHangUp: { server.reloadCertificate() })
        logger.info("stopping")
        server.stop()
    }

    /// Blocks the main thread until SIGINT or SIGTERM; SIGHUP calls `onHangUp`.
    private func waitForTermination(onHangUp: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        var sources: [DispatchSourceSignal] = []
        signal(SIGHUP, SIG_IGN)
        let hangUp = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
        hangUp.setEventHandler(handler: onHangUp)
        hangUp.resume()
        sources.append(hangUp)
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { done.signal() }
            source.resume()
            sources.append(source)
        }
        signal(SIGPIPE, SIG_IGN)
        done.wait()
        sources.forEach { $0.cancel() }
    }
}
