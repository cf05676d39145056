import Foundation
import Synchronization
import SightlineVision
import SightlineSupport

/// Feeds the service manager's watchdog only while frames flow and the
/// stream server's service thread runs: a server whose source is lost, whose
/// pipeline is wedged or whose service thread is stuck stops feeding it and
/// is restarted by systemd after `WatchdogSec` (as Frigate restarts a camera
/// after 20 s without frames). A source in no signal that recovers within
/// that time costs nothing.
///
/// Threads: `deliver` (pipeline thread) stores the frame's time in an
/// `Atomic`; a thread of its own (`sightline.watchdog`) pings every half
/// interval if a frame came within the last interval. Without a watchdog
/// asked for (`WATCHDOG_USEC` unset) the thread is not started.
public final class WatchdogSink: FrameSink {
    public let name = "watchdog"
    private let lastFrameNanos = Atomic<UInt64>(0)
    private let delivered = Atomic<UInt64>(0)
    private let stopRequested = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)
    private let interval: Double?
    private let clock: any SightlineClock
    /// A further condition for each ping (the stream server's service thread is responsive).
    private let alsoRequired = LockedCallback<Double, Bool>()

    /// `interval` nil: none asked for, the sink only counts.
    public init(interval: Double? = ServiceManager.watchdogInterval, clock: any SightlineClock = .real) {
        self.interval = interval
        self.clock = clock
    }

    public func deliver(_ frame: ProcessedFrame) {
        lastFrameNanos.store(clock.nanos(), ordering: .relaxed)
        delivered.add(1, ordering: .relaxed)
    }

    public var counts: SinkCounts {
        let count = delivered.load(ordering: .relaxed)
        return SinkCounts(delivered: count, consumed: count)
    }

    /// Any thread: pings also need `condition(interval)` to hold, e.g. that
    /// the service thread that serves the frames still runs.
    public func alsoRequire(_ condition: @escaping @Sendable (Double) -> Bool) {
        alsoRequired.set(condition)
    }

    /// Whether the server is doing its job: a frame came within the last
    /// `seconds`, and any further condition holds.
    public func healthy(within seconds: Double) -> Bool {
        framesFlowed(within: seconds) && (alsoRequired(seconds) ?? true)
    }

    /// Whether a frame came within the last `seconds`.
    public func framesFlowed(within seconds: Double) -> Bool {
        clock.happened(lastFrameNanos.load(ordering: .relaxed), within: seconds)
    }

    public func start() throws {
        guard let interval else { return }
        started.store(true, ordering: .sequentiallyConsistent)
        let thread = Thread { [self] in
            Thread.setOSName("sightline.watchdog")
            let step = UInt64(interval / 2 * 1e9)
            var next = clock.nanos() + step
            while !stopRequested.load(ordering: .relaxed) {
                clock.sleep(until: min(next, clock.nanos() + 100_000_000))
                guard clock.nanos() >= next else { continue }
                next += step
                if healthy(within: interval) { ServiceManager.watchdogPing() }
            }
            finished.signal()
        }
        thread.name = "sightline.watchdog"
        thread.start()
    }

    public func stop() {
        stopRequested.store(true, ordering: .relaxed)
        clock.wakeSleepers()
        if started.load(ordering: .sequentiallyConsistent) { finished.wait() }
    }
}
