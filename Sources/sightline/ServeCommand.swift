import ArgumentParser
import Foundation
import Logging
import SightlineCore
import SightlineVision
import SightlineSupport
import SightlinePipeline

struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Capture, detect and stream (the default command)."
    )

    @OptionGroup var options: SettingsOptions

    func run() throws {
        MallocArenas.limitForServer()
        let settings = try options.resolveSettings()
        OpenCVThreads.set(settings.opencvThreads)
        let logger = try LogSetup.bootstrap(level: settings.logLevel)
        // Watched before the server starts: a SIGTERM that came while it
        // started (or between its start and the wait) was otherwise lost,
        // and the process never stopped (CI saw `serve` ignore a SIGTERM
        // sent right after its first answers).
        let termination = watchTermination()
        let server: SightlineServer
        do {
            server = try SightlineServer(settings: settings, logger: logger)
            try server.start()
        } catch {
            logger.critical("cannot start: \(error)")
            throw ExitCode(2)
        }
        signal(SIGHUP, SIG_IGN)
        let hangUp = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
        hangUp.setEventHandler { server.reloadCertificate() }
        hangUp.resume()
        let trimming = MallocArenas.startReturningFreedPages()
        termination.done.wait()
        trimming.cancel()
        termination.sources.forEach { $0.cancel() }
        hangUp.cancel()
        logger.info("stopping")
        server.stop()
    }

    /// Takes SIGINT and SIGTERM from their default action and signals `done`
    /// when one comes (it counts, so one that came early is not lost).
    private func watchTermination() -> (done: DispatchSemaphore, sources: [DispatchSourceSignal]) {
        let done = DispatchSemaphore(value: 0)
        var sources: [DispatchSourceSignal] = []
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { done.signal() }
            source.resume()
            sources.append(source)
        }
        signal(SIGPIPE, SIG_IGN)
        return (done, sources)
    }
}
