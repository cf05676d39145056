import Foundation
import Logging
import Synchronization
import SightlineVision
import SightlineSupport
import SightlinePipeline
import SightlineHTTP
import SightlineStreaming

/// What `/api/state` and `/metrics` say about one publish target.
public struct PublishStatus: Codable, Sendable, Equatable {
    public enum State: String, Codable, Sendable {
        /// Waiting for a keyframe, or connecting to the relay.
        case connecting
        /// Access units are going out.
        case publishing
        /// The relay failed or refused; trying again after `retryInSeconds`.
        case retrying
        case stopped
    }

    /// The target as configured, without credentials.
    public var url: String
    public var state: State = .connecting
    /// Why the last attempt ended (empty while all is well).
    public var detail = ""
    public var retryInSeconds: Double?
    public var frames: UInt64 = 0
    public var bytes: UInt64 = 0
    /// Frames the pipeline made since the first one sent that did not reach the relay: skipped
    /// to the next keyframe while it was slow, or made while it was away.
    public var drops: UInt64 = 0
    /// Connections made after the first.
    public var reconnects: UInt64 = 0
}

/// Publishes the main H.264 rendition to one relay, on its own thread
/// (`sightline.publish`): it is a viewer of the `VideoFeed` while connected
/// (so the encoder runs, and a new connection starts on a forced keyframe),
/// sends each access unit as the encoder made it (SEI boxes included, SPS
/// and PPS before every keyframe), and never slows the pipeline or the
/// browsers: when the relay is slower than the frames, or away, what it
/// cannot take is dropped to the next keyframe and counted. A failed or
/// lost connection is retried with back-off (0.5 s doubling to 3 s), every
/// blocking step bounded by `timeoutSeconds`.
///
/// Threads: `start` and `stop` on the main thread; the status is in a
/// `Mutex`; the muxer under way is in a `Mutex` only so `stop` can interrupt it.
public final class Publisher: Sendable {
    public let target: PublishTarget
    private let feed: VideoFeed
    private let logger: Logger
    private let timeoutSeconds: Double
    private let status: Locked<PublishStatus>
    private let stopping = Atomic<Bool>(false)
    private let current = Locked<H264Muxer?>(nil)
    private let wake: (id: UInt64, semaphore: DispatchSemaphore)
    private let finished = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)
    /// Told when publishing starts (+1) and ends (-1): a relay being fed counts as watching.
    private let watching: @Sendable (Int) -> Void

    static let backoffStart = 0.5
    static let backoffMax = 3.0

    public init(target: PublishTarget, feed: VideoFeed, logger: Logger, timeoutSeconds: Double = 5,
                watching: @escaping @Sendable (Int) -> Void = { _ in }) {
        self.watching = watching
        self.target = target
        self.feed = feed
        self.logger = logger
        self.timeoutSeconds = timeoutSeconds
        status = Locked(PublishStatus(url: target.shown))
        wake = feed.wakeOnPublish()
    }

    public var snapshot: PublishStatus { status.withLock { $0 } }

    public func start() {
        started.store(true, ordering: .sequentiallyConsistent)
        let thread = Thread { [self] in
            Thread.setOSName("sightline.publish")
            run()
            finished.signal()
        }
        thread.name = "sightline.publish"
        thread.start()
    }

    /// Main thread: interrupts what is under way and waits for the thread.
    public func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        current.withLock { $0?.interrupt() }
        wake.semaphore.signal()
        if started.load(ordering: .sequentiallyConsistent) { finished.wait() }
        feed.stopWaking(wake.id)
        status.withLock { $0.state = .stopped; $0.retryInSeconds = nil }
    }

    private var isStopping: Bool { stopping.load(ordering: .relaxed) }

    private func run() {
        var backoff = Self.backoffStart
        var attempts = 0
        var lastSeq: UInt64?
        while !isStopping {
            attempts += 1
            if attempts > 1 { status.withLock { $0.reconnects += 1 } }
            let published = publishUntilFailure(lastSeq: &lastSeq)
            guard !isStopping else { break }
            if published { backoff = Self.backoffStart }
            status.withLock { $0.state = .retrying; $0.retryInSeconds = backoff }
            let deadline = MonotonicClock.nanos() + UInt64(backoff * 1e9)
            while !isStopping && MonotonicClock.nanos() < deadline {
                MonotonicClock.sleep(until: min(deadline, MonotonicClock.nanos() + 50_000_000))
            }
            backoff = min(Self.backoffMax, backoff * 2)
        }
    }

    /// One connection: joins the feed, waits for a keyframe, opens the relay
    /// with its SPS and PPS, sends until something fails. Returns whether
    /// any access unit went out.
    private func publishUntilFailure(lastSeq: inout UInt64?) -> Bool {
        var policy = H264Viewer.Policy()
        policy.maxLag = 1.0
        policy.lowAvailable = false
        let viewer = H264Viewer(format: .main, policy: policy, feed: feed, now: MonotonicClock.nanos())
        status.withLock { $0.state = .connecting; $0.retryInSeconds = nil }
        var muxer: H264Muxer?
        var parameterSets = Data()
        var firstNanos: UInt64 = 0
        var lastMillis: Int64 = -1
        var sent = false
        var up = false
        defer {
            viewer.leave(feed)
            current.withLock { $0 = nil }
            if up { watching(-1) }
        }
        while !isStopping {
            let (step, _) = viewer.step(feed, now: MonotonicClock.nanos())
            guard case .accessUnit(let unit) = step else {
                if case .wait = step { _ = wake.semaphore.wait(timeout: .now() + 0.5) }
                continue
            }
            do {
                if unit.isKeyframe {
                    let sets = AnnexB.parameterSets(of: unit.data)
                    if muxer != nil && sets != parameterSets {
                        // A new encoder (another frame size): the relay needs a new stream.
                        status.withLock { $0.detail = "the picture size changed; starting a new stream" }
                        return sent
                    }
                    if muxer == nil {
                        guard let size = feed.renditions().first(where: { $0.rendition == .main }),
                              let width = size.width, let height = size.height else { continue }
                        let opened = try H264Muxer(url: target.url, format: target.format, width: width, height: height,
                                                   parameterSets: sets, timeoutSeconds: timeoutSeconds)
                        current.withLock { $0 = opened }
                        if isStopping { return sent }
                        muxer = opened
                        parameterSets = sets
                        firstNanos = unit.capturedNanos
                        logger.notice("publishing", metadata: ["target": "\(target.shown)"])
                        status.withLock { $0.state = .publishing; $0.detail = "" }
                        up = true
                        watching(1)
                    }
                }
                guard let muxer else { continue }
                if let previous = lastSeq, unit.seq > previous + 1 {
                    status.withLock { $0.drops += unit.seq - previous - 1 }
                }
                lastSeq = unit.seq
                var millis = Int64((unit.capturedNanos &- firstNanos) / 1_000_000)
                if millis <= lastMillis { millis = lastMillis + 1 }
                lastMillis = millis
                try muxer.write(unit.data, milliseconds: millis, isKeyframe: unit.isKeyframe)
                sent = true
                status.withLock { $0.frames += 1; $0.bytes += UInt64(unit.data.count) }
            } catch {
                if !isStopping {
                    logger.warning("publishing failed; trying again", metadata: ["target": "\(target.shown)", "error": "\(error)"])
                    status.withLock { $0.detail = "\(error)" }
                }
                return sent
            }
        }
        return sent
    }
}
