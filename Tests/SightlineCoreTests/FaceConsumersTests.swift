import Foundation
import Logging
import Synchronization
import Testing
@testable import SightlinePipeline
@testable import SightlineEvents
@testable import SightlineCore
import SightlineTesting
import SightlineEventsTesting

/// A configured sink of a test's own: it uses faces while the test says so.
/// Giving it to `CameraAssembly.build` is all it takes for the face stage to
/// hear it (one file plus its place in the sinks list).
final class FaceUsingSink: FrameSink {
    let name = "face-user"
    let wantsFaces = Atomic<Bool>(false)
    private let delivered = Atomic<UInt64>(0)
    func deliver(_ frame: ProcessedFrame) { delivered.add(1, ordering: .relaxed) }
    var faceUse: FaceUse { wantsFaces.load(ordering: .relaxed) ? .live : .none }
    var counts: SinkCounts {
        let n = delivered.load(ordering: .relaxed)
        return SinkCounts(delivered: n, consumed: n)
    }
}

/// Which sinks use faces (`FrameSink.consumesFaces`), and that the face stage
/// looks for them at the full rate exactly while one does.
@Suite("Sinks that use faces")
struct FaceConsumersTests {
    @Test("the stream sink uses faces while a /ws or MJPEG client streams")
    func streamSink() {
        let stats = PipelineStats()
        let sink = StreamSink(stats: stats)
        #expect(!sink.consumesFaces)
        stats.clients(.webSocket, change: 1)
        #expect(sink.consumesFaces)
        stats.clients(.webSocket, change: -1)
        stats.clients(.mjpeg, change: 1)
        #expect(sink.consumesFaces)
        stats.clients(.mjpeg, change: -1)
        stats.publishTarget(up: 1)
        #expect(!sink.consumesFaces, "a relay is the H.264 sink's")
    }

    @Test("the H.264 sink uses faces while a relay is fed, not for the clip recorder's pre-capture")
    func h264Sink() {
        let stats = PipelineStats()
        let sink = H264Sink(settings: VideoSettings(), stats: VideoStats(), sourceFPS: { 25 },
                            relaysUp: { stats.hasRelaysUp }, logger: Logger(label: "test"))
        sink.feed.holdEncoder(.main)  // as the clip recorder's pre-capture holds it
        defer { sink.feed.releaseEncoder(.main) }
        #expect(sink.feed.hasConsumers)
        #expect(!sink.consumesFaces)
        stats.publishTarget(up: 1)
        #expect(sink.consumesFaces)
        stats.publishTarget(up: -1)
        #expect(!sink.consumesFaces)
    }

    /// The frames carry their times; the recorder thread's tick reads a
    /// `ManualClock` that stands at the first frame's, so only frames end the event.
    @Test("the event sink without a broker uses faces while it follows one, from its first frame to its end")
    func eventSink() throws {
        let store = EventStore(dataDirectory: try TestPaths.temporaryDirectory())
        try store.load()
        let sink = EventSink(options: TrackerFrames.options(min: 0.5, endAfter: 1), store: store, publisher: nil,
                             logger: Logger(label: "test"), clock: ManualClock(nanos: 1_000_000_000))  // frame time 0
        try sink.start()
        defer { sink.stop() }
        #expect(!sink.consumesFaces)
        sink.deliver(TrackerFrames.frame(1, at: 0.1, [TrackerFrames.logo()]))
        #expect(!sink.consumesFaces, "a template is not a face")
        sink.deliver(TrackerFrames.frame(2, at: 0.2, [TrackerFrames.logo(), TrackerFrames.face(1)]))
        #expect(sink.consumesFaces, "a face new to the tracker, before it is an event")
        sink.deliver(TrackerFrames.frame(3, at: 1.0, [TrackerFrames.face(1)]))
        #expect(sink.consumesFaces, "its event is open")
        sink.deliver(TrackerFrames.frame(4, at: 1.5, [TrackerFrames.logo()]))
        #expect(sink.consumesFaces, "out of view for less than endAfter")
        sink.deliver(TrackerFrames.frame(5, at: 2.5, [TrackerFrames.logo()]))
        #expect(!sink.consumesFaces, "its event ended")
    }

    @Test("a camera's face stage runs unwatched while no sink uses faces and active once one does")
    func faceStageHearsTheSinks() throws {
        var settings = ServeSettings()
        settings.source = "demo?fps=15"
        settings.dataDir = try TestPaths.temporaryDirectory()
        settings.faceModel = try FaceTestData.modelPath()
        let sink = FaceUsingSink()
        let stats = PipelineStats()
        let camera = try CameraAssembly(settings: settings, logger: Logger(label: "test")).build(stats: stats, sinks: [sink])
        try camera.start()
        defer { camera.stop() }
        #expect(waitUntil(seconds: 30) { stats.snapshot().faceMode == .unwatched },
                "mode: \(String(describing: stats.snapshot().faceMode))")
        sink.wantsFaces.store(true, ordering: .relaxed)
        // The demo's face is tracked, so a watched stage is active.
        #expect(waitUntil(seconds: 30) { stats.snapshot().faceMode == .active },
                "mode: \(String(describing: stats.snapshot().faceMode))")
        sink.wantsFaces.store(false, ordering: .relaxed)
        #expect(waitUntil(seconds: 30) { stats.snapshot().faceMode == .unwatched })
    }
}
