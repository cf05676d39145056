import Foundation

/// Where processed frames go: the stream server, and later events and MQTT.
///
/// `deliver` is called on the pipeline thread for every processed frame and
/// must return at once: a sink hands the frame to its own thread or event
/// loop through a one-slot mailbox (the newest frame wins; a frame replaced
/// before the sink took it counts as skipped for that sink), so a slow sink
/// never slows the pipeline or another sink.
///
/// Adding a sink is one new file (a `FrameConsumer` run by a `ThreadedSink`,
/// or a `FrameSink` of its own) and its place in the list `CameraUnit`
/// (SightlineCore/App) hands to `CameraAssembly.build(stats:sinks:)` (stream,
/// H.264, watchdog, events, in that order). A sink that wants faces found at full rate says so
/// in `faceUse`; nothing else needs to know about it.
public protocol FrameSink: AnyObject, Sendable {
    /// Names the sink in `/api/state` and `/metrics`.
    var name: String { get }
    /// Any thread (the face stage asks on the pipeline thread, every frame):
    /// how this sink uses faces now (`FaceUse`): live, they are looked for at
    /// the full rate (`faces.maxRate`); while no sink uses them, at the idle
    /// rate (`faces.idleRate`) only. Must be cheap: an atomic or a lock.
    var faceUse: FaceUse { get }
    /// Pipeline thread, every frame: the JPEG sizes this sink sends of each
    /// frame now, which the pipeline encodes before `deliver` (none: no JPEG
    /// is made for it; a sink that needs one only now and then makes it
    /// itself through `ProcessedFrame.jpeg`, on its own thread). Must be cheap.
    var wantedJPEG: Set<JPEGSize> { get }
    /// Pipeline thread: take the frame, without waiting for anything.
    func deliver(_ frame: ProcessedFrame)
    /// Frames delivered, consumed and skipped so far (any thread).
    var counts: SinkCounts { get }
    /// Starts the sink's own thread, if it has one (main thread, before the pipeline).
    func start() throws
    /// Stops it (main thread, after the pipeline has stopped).
    func stop()
}

extension FrameSink {
    public var faceUse: FaceUse { .none }
    /// Whether this sink uses faces at all now.
    public var consumesFaces: Bool { faceUse != .none }
    public var wantedJPEG: Set<JPEGSize> { [] }
    public func start() throws {}
    public func stop() {}
}

/// How a sink is keeping up.
public struct SinkCounts: Codable, Sendable, Equatable {
    /// Frames the pipeline handed over.
    public var delivered: UInt64 = 0
    /// Frames the sink finished with.
    public var consumed: UInt64 = 0
    /// Frames replaced in the sink's mailbox before it took them.
    public var skipped: UInt64 = 0

    public init(delivered: UInt64 = 0, consumed: UInt64 = 0, skipped: UInt64 = 0) {
        self.delivered = delivered
        self.consumed = consumed
        self.skipped = skipped
    }
}
