import CSightlineLWS
import Foundation
import Logging
import Synchronization
import SightlineSupport

/// The libwebsockets context and its service thread (`sightline.lws`), after
/// libwebsockets' minimal-ws-server-threads: `start` makes the context and
/// the thread, which runs `lws_service` until `stop`; `wake` is
/// `lws_cancel_service`, which makes lws call LWS_CALLBACK_EVENT_WAIT_CANCELLED
/// on the service thread. Every lws callback goes to the `CallbackDispatch`
/// that `start` was given, which from then on belongs to the service thread.
///
/// Threads: `start` and `stop` from the main thread, `wake` and `responsive`
/// from any; the context handle (for waking and stopping) is in `control`, a
/// `Mutex`; the last wake-up's time is an `Atomic`.
final class ServiceLoop: Sendable {
    /// The lws context while it may be woken: lws_cancel_service is safe from
    /// any thread, but not after the context is destroyed, so waking and
    /// stopping go through this lock.
    private struct Control { var context: ContextHandle?; var stopping = false }
    private let control = Locked(Control())
    /// When the service thread last woke for a frame or an answer (written there, read by the watchdog).
    private let wokeNanos = Atomic<UInt64>(0)
    private let finished = DispatchSemaphore(value: 0)
    private let logger: Logger
    private let clock: any SightlineClock

    init(logger: Logger, clock: any SightlineClock = .real) {
        self.logger = logger
        self.clock = clock
    }

    /// Main thread (once): binds, makes the context and starts the service
    /// thread, which takes `dispatch` over (lws reaches it through the
    /// context's user pointer; lws's callbacks while the context is made,
    /// such as LWS_CALLBACK_PROTOCOL_INIT, come on this thread). Returns the
    /// bound port; throws when the port cannot be bound.
    func start(_ options: StreamServer.Options, dispatch: sending CallbackDispatch) throws -> Int {
        // SIGHTLINE_LWS_LOG: libwebsockets' log levels as its bit mask (1 error, 2 warn,
        // 4 notice, 8 info), for diagnosing a connection; errors only by default.
        let lwsLevels = ProcessInfo.processInfo.environment["SIGHTLINE_LWS_LOG"].flatMap { Int32($0) } ?? Int32(LLL_ERR)
        sl_lws_set_logging(lwsLevels, lwsLogEntry)
        let descriptors = Self.raiseOpenFileLimit()
        logger.info("connections: up to about \(max(0, descriptors - 64)) at once (RLIMIT_NOFILE \(descriptors), less the process's own files); \(options.maxUnfinishedPerAddress) unfinished per address")
        var port: Int32 = 0
        var protocols: UnsafeMutableRawPointer?
        // Retained for the context's life; released by the service thread after the context is destroyed.
        let user = Unmanaged.passRetained(dispatch).toOpaque()
        guard let context = sl_lws_create_context(options.host, Int32(options.port), lwsCallbackEntry,
                                                  options.maxMessageBytes, user, options.tls?.certificate,
                                                  options.tls?.privateKey, Int32(options.requestTimeoutSeconds),
                                                  Int32(options.headerPool), &port, &protocols) else {
            Unmanaged<CallbackDispatch>.fromOpaque(user).release()
            throw ServerError.cannotListen("cannot listen on \(options.host):\(options.port) (in use, or not an address of this machine)")
        }
        // Before the service thread runs: lws serves nothing until it does.
        dispatch.bound(port: Int(port))
        let handle = ContextHandle(pointer: context, protocols: protocols, dispatch: user)
        control.withLock { $0.context = handle }
        let thread = Thread { [self] in
            Thread.setOSName("sightline.lws")
            serviceLoop(handle)
        }
        thread.name = "sightline.lws"
        thread.start()
        return Int(port)
    }

    /// Any thread: makes the service thread call LWS_CALLBACK_EVENT_WAIT_CANCELLED.
    func wake() {
        control.withLock { control in
            if let context = control.context, !control.stopping { lws_cancel_service(context.pointer) }
        }
    }

    /// Service thread: it answered a wake-up now.
    func markWoke() {
        wokeNanos.store(clock.nanos(), ordering: .relaxed)
    }

    /// Any thread: whether the service thread answered a wake-up within the last `seconds`.
    func responsive(within seconds: Double) -> Bool {
        clock.happened(wokeNanos.load(ordering: .relaxed), within: seconds)
    }

    /// Main thread: ends the service thread, which destroys the context, and
    /// waits for it. No wake reaches the context after this returns.
    func stop() {
        let running = control.withLock { control -> Bool in
            guard let context = control.context, !control.stopping else { return false }
            control.stopping = true
            lws_cancel_service(context.pointer)
            return true
        }
        guard running else { return }
        finished.wait()
    }

    /// Service thread: runs until `stop`, or until lws fails. Either way the
    /// context is taken out of `control` before it is destroyed, so a `wake`
    /// from another thread never reaches a destroyed context.
    private func serviceLoop(_ handle: ContextHandle) {
        let context = handle.pointer
        while !control.withLock({ $0.stopping }) {
            if lws_service(context, 0) < 0 {
                logger.error("libwebsockets stopped serving")
                break
            }
        }
        control.withLock { control in
            control.stopping = true
            control.context = nil
        }
        lws_context_destroy(context)
        free(handle.protocols)  // lws keeps using the protocols array until the context is gone
        Unmanaged<CallbackDispatch>.fromOpaque(handle.dispatch).release()
        finished.signal()
    }

    /// The total cap on connections is the process's open-file limit (libwebsockets
    /// sizes its table from it): the soft limit is raised to the hard one, as far as
    /// 1,048,576, and returned. Beyond it, new connections wait in the kernel's
    /// backlog; open ones are never evicted.
    static func raiseOpenFileLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        let wanted = min(limit.rlim_max, 1 << 20)
        if limit.rlim_cur < wanted {
            var raised = limit
            raised.rlim_cur = wanted
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return Int(limit.rlim_cur)
    }
}

/// The lws context, to wake the service thread from other threads.
/// `@unchecked Sendable`: `pointer` is only passed to lws_cancel_service
/// (which lws documents as callable from any thread) while
/// `ServiceLoop.control` is held and the context is alive; `protocols` and
/// `dispatch` are touched only by the service thread, after the context is
/// destroyed.
private struct ContextHandle: @unchecked Sendable {
    let pointer: OpaquePointer
    /// The protocols array the shim made for this context; freed by the service thread after the context.
    let protocols: UnsafeMutableRawPointer?
    /// The retained `CallbackDispatch` (the context's user pointer); released by the service thread after the context.
    let dispatch: UnsafeMutableRawPointer
}

/// Service thread: the C entry point lws calls; finds the dispatch through the context's user pointer.
private func lwsCallbackEntry(_ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
                              _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
    guard let wsi, let context = lws_get_context(wsi), let raw = lws_context_user(context) else {
        return lws_callback_http_dummy(wsi, reason, user, input, length)
    }
    return Unmanaged<CallbackDispatch>.fromOpaque(raw).takeUnretainedValue()
        .callback(wsi, reason, user, input, length)
}

/// Whichever thread lws logs from (the service thread, or the main thread in `start`).
private func lwsLogEntry(_ level: Int32, _ line: UnsafePointer<CChar>?) {
    if let line { FileHandle.standardError.write(Data("lws: ".utf8) + Data(String(cString: line).utf8)) }
}
