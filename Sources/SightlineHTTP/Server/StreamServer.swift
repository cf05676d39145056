import Foundation
import Logging
import Synchronization
import SightlineSupport

/// The libwebsockets server: HTTP/1.1 requests through a `Router` (static
/// files, the JSON API) and streams (WebSockets, endless answers) through a
/// `StreamProvider`, all on one service thread. It knows requests, answers,
/// connections, access and TLS; what a stream carries is the provider's.
/// This type owns and wires
/// the parts, each in its own file:
///
/// - `ServiceLoop`: the lws context and its service thread (`sightline.lws`);
///   `wake` is `lws_cancel_service`.
/// - `CallbackDispatch`: every lws callback, by reason, to the parts below;
///   made in `start` and from then on the service thread's.
/// - `ConnectionAdmission`: per-address limits on connections that have not
///   finished their headers.
/// - `RequestReader` (with `RequestHeaders`): request intake, the
///   libwebsockets 4.1 workarounds, routing, the worker's answers.
/// - `ResponseWriter`: answers' heads and bodies.
/// - `StreamSession`s (one per stream, made by the `StreamProvider`): what
///   each WebSocket viewer or endless answer is sent.
/// - `ServiceInbox`: what other threads hand the service thread (worker
///   answers, a certificate reload, a revocation finding), then wake it.
/// - `RevocationWatch`: asks the token store (tokens.json) for revocations on
///   its own thread (`sightline.revocations`), never the service thread.
///
/// Threads (after libwebsockets' minimal-ws-server-threads): a producer
/// (a camera's pipeline) publishes under its own lock and calls `wake()`; the
/// service thread answers LWS_CALLBACK_EVENT_WAIT_CANCELLED by telling each
/// stream's session, which asks for a writeable callback when something is
/// due and writes it when its socket can take it. HTTP requests go through the `Router`: quick
/// routes answer on the service thread, slow ones run on the
/// `RequestWorker`, whose answers come back through the inbox and the same
/// wake-up.
///
/// `Sendable` as the compiler checks it: everything here is immutable or
/// `Sendable` (the port behind an `Atomic`); the service thread's state is
/// in the `CallbackDispatch`, which nothing here keeps.
public final class StreamServer: Sendable {
    public struct Options: Sendable {
        public var host = "127.0.0.1"
        public var port = 8080
        /// Largest HTTP request body (uploads).
        public var maxBodyBytes = 8 << 20
        /// Largest WebSocket message a client may send.
        public var maxMessageBytes = 64 << 10
        /// Bytes written per writeable callback for plain HTTP bodies.
        public var chunkBytes = 64 << 10
        /// HTTPS and WSS from these PEM files (nil: plain HTTP).
        public var tls: TLSFiles?
        /// Connections one address may have open that have not finished
        /// their request headers: more are closed at once, so idle sockets
        /// from one place cannot take the header buffers everyone needs.
        public var maxUnfinishedPerAddress = 16
        /// Reverse proxies: exempt from `maxUnfinishedPerAddress`, and their
        /// X-Forwarded-For/Forwarded give the client's address (see `TrustedProxies`).
        public var trustedProxies = TrustedProxies()
        /// Connections in all that may be unfinished at once: one more evicts
        /// the oldest (its socket is shut down), so idle sockets from many
        /// addresses can never take every header buffer and lock out someone
        /// new; a real client sends its headers within milliseconds of
        /// connecting and is never the oldest for long.
        public var maxUnfinished = 256
        /// libwebsockets' header buffers (16 KiB each, made as needed): the
        /// unfinished connections' share plus streams and uploads in progress,
        /// which hold theirs until they end.
        public var headerPool = 1024
        /// Seconds a client has to send its request headers, and each piece
        /// of its body (libwebsockets' own timeout).
        public var requestTimeoutSeconds = 5
        /// Seconds a request may wait for the worker's answer (queue and
        /// job); lws's content timeout, which would close it after
        /// `requestTimeoutSeconds`, is replaced by this meanwhile.
        public var workerWaitSeconds = 120
        /// Whether a body that starts with these bytes (up to 8) is a file taken whole
        /// even under a form's Content-Type (curl's --data-binary labels an image
        /// application/x-www-form-urlencoded); the server's own routes decide what a file is.
        public var isWholeFile: @Sendable (Data) -> Bool = { _ in false }
        /// The clock the service thread's wake-ups are timed by (`serviceResponsive`; tests drive a `ManualClock`).
        public var clock: any SightlineClock = .real
        public init() {}
    }

    public let options: Options
    /// What its streams carry.
    private let streams: any StreamProvider
    /// The server's own counts (refused connections, stalled headers).
    public let stats = ServerStats()
    private let routes: RouteTable
    private let worker: RequestWorker
    /// Host, Origin and credential checks that come before routing (nil: none).
    private let access: AuthGuard?
    private let logger: Logger
    private let loop: ServiceLoop
    private let inbox: ServiceInbox
    /// Ends streams whose token is revoked (nil: no access checks, no tokens).
    private let revocations: RevocationWatch?
    private let port = Atomic<Int>(0)

    public convenience init(options: Options, streams: any StreamProvider, logger: Logger, router: Router,
                            worker: RequestWorker = RequestWorker(), access: AuthGuard? = nil) {
        self.init(options: options, streams: streams, logger: logger, router: router, worker: worker, access: access,
                  readTokens: nil)
    }

    /// `readTokens`: how the revocation watch asks the token store (nil: `access.tokens.validCredentials`; tests wrap it).
    init(options: Options, streams: any StreamProvider, logger: Logger, router: Router,
         worker: RequestWorker, access: AuthGuard?, readTokens: RevocationWatch.Read?) {
        self.access = access
        self.options = options
        self.streams = streams
        self.logger = logger
        routes = RouteTable(router)
        self.worker = worker
        let loop = ServiceLoop(logger: logger, clock: options.clock)
        let inbox = ServiceInbox(waking: loop)
        self.loop = loop
        self.inbox = inbox
        revocations = access.map { access in
            RevocationWatch(read: readTokens ?? { access.tokens.validCredentials() }, deliver: { inbox.post($0) })
        }
    }

    /// The port the server listens on (after `start`; the one asked for, or the one given for port 0).
    public var boundPort: Int { port.load(ordering: .acquiring) }

    /// Main thread (once): binds, starts the worker, the service thread and the revocation watch.
    /// Throws when the port cannot be bound.
    public func start() throws {
        let dispatch = CallbackDispatch(options: options, loop: loop, inbox: inbox, streams: streams, stats: stats,
                                        routes: routes, worker: worker, access: access, logger: logger)
        let bound = try loop.start(options, dispatch: dispatch)
        port.store(bound, ordering: .releasing)
        worker.start()
        revocations?.start()
    }

    /// Any thread: whether the service thread answered a wake-up (every new
    /// frame sends one) within the last `seconds`. A service thread stuck in
    /// a loop stops the watchdog's pings as a stalled source does.
    public func serviceResponsive(within seconds: Double) -> Bool {
        loop.responsive(within: seconds)
    }

    /// Any thread: requests decided from now on use `router` (cameras added or removed).
    public func replaceRoutes(with router: Router) {
        routes.replace(with: router)
    }

    /// Any thread: something streamed changed (a new frame, a camera removed): every stream's session is told.
    public func wake() {
        loop.wake()
    }

    /// Any thread: read the certificate files again (a renewed certificate)
    /// and use them for new connections; open ones keep theirs. Done on the
    /// service thread at its next wake-up (see `CertificateReload`).
    public func reloadCertificate() {
        inbox.requestCertificateReload()
    }

    /// Main thread: finishes the worker's jobs, stops the revocation watch,
    /// then ends the service thread, which destroys the context. No wake
    /// reaches it after this returns.
    public func stop() {
        worker.stop()
        revocations?.stop()
        loop.stop()
    }
}

public enum ServerError: Error, CustomStringConvertible {
    case cannotListen(String)
    public var description: String {
        switch self { case .cannotListen(let why): return why }
    }
}
