import Foundation
import Logging
import Testing
@testable import SightlineSupport
@testable import SightlineVision
@testable import SightlinePipeline
@testable import SightlineEvents
import SightlineTesting
import SightlineEventsTesting

@Suite struct EventRecorderTests {
    typealias S = StoredEvents

    /// A 64x48 blue frame with a red rectangle over the middle half (the records' box), as a JPEG.
    static func frameJPEG() throws -> Data {
        let image = ImageBuffer(width: 64, height: 48)
        for y in 0..<48 {
            for x in 0..<64 {
                let inside = x >= 16 && x < 48 && y >= 12 && y < 36
                let p = image.bytes + y * image.stride + x * 3
                (p[0], p[1], p[2]) = inside ? (0, 0, 255) : (255, 0, 0)  // BGR
            }
        }
        return try JPEGEncoder(quality: 95).encode(image)
    }

    static func change(_ type: EventChange.Kind, _ record: EventRecord, jpeg: Data, bestChanged: Bool) -> EventChange {
        EventChange(type: type, before: record, after: record, frameTime: record.lastTime, frameNanos: 0, bestJPEG: jpeg,
                    bestChanged: bestChanged)
    }

    static func waitUntil(_ seconds: Double = 10, _ condition: () -> Bool) -> Bool {
        SightlineTesting.waitUntil(seconds: seconds, condition)
    }

    @Test func writesTheStreamsJPEGAndACropOfTheBox() throws {
        let dir = try TestPaths.temporaryDirectory()
        let store = EventStore(dataDirectory: dir)
        try store.load()
        let recorder = EventRecorder(store: store, logger: Logger(label: "test"))
        recorder.start()
        let jpeg = try Self.frameJPEG()
        var record = S.record(1, open: true)
        recorder.enqueue(EventBatch(changes: [Self.change(.new, record, jpeg: jpeg, bestChanged: true)]))
        record.endTime = record.lastTime
        record.name = "later"
        recorder.enqueue(EventBatch(changes: [Self.change(.end, record, jpeg: jpeg, bestChanged: false)]))
        recorder.stop()
        let stored = try #require(store.record(record.id))
        #expect(stored.endTime != nil && stored.name == "later")
        #expect(store.image(record.id, crop: false) == jpeg, "the stream's own JPEG, not a second encode")
        let crop = try JPEGDecoder().decode(try #require(store.image(record.id, crop: true)))
        #expect(crop.width == 32 && crop.height == 24)
        var red = 0
        for y in 0..<crop.height {
            for x in 0..<crop.width {
                let (b, g, r) = crop.pixel(x: x, y: y)
                if r > 200 && g < 60 && b < 60 { red += 1 }
            }
        }
        #expect(red > crop.width * crop.height * 9 / 10, "the crop shows what was in the box: \(red) red pixels")
        #expect(recorder.counts.saved >= 1 && recorder.counts.failed == 0)
    }

    @Test func waitingEventsCoalesceAndTheOldestIsDroppedBeyondCapacity() throws {
        let dir = try TestPaths.temporaryDirectory()
        let store = EventStore(dataDirectory: dir)
        try store.load()
        let recorder = EventRecorder(store: store, capacity: 2, logger: Logger(label: "test"))
        let jpeg = try Self.frameJPEG()
        for n in 1...3 {
            for _ in 0..<5 {  // five states of each event: one entry
                recorder.enqueue(EventBatch(changes: [Self.change(.update, S.record(n), jpeg: jpeg, bestChanged: false)]))
            }
        }
        #expect(recorder.counts.waiting == 2 && recorder.counts.dropped == 1)
        recorder.start()
        recorder.stop()
        #expect(store.allIDs == [2, 3].map { S.record($0).id })
        #expect(recorder.counts.saved == 2)
    }

    @Test func aFailingDiskIsCountedAndNothingStops() throws {
        let dir = try TestPaths.temporaryDirectory()
        let store = EventStore(dataDirectory: dir)
        try store.load()
        try FileManager.default.removeItem(atPath: store.directory)
        try Data("a file where the directory was".utf8).write(to: URL(fileURLWithPath: store.directory))
        let recorder = EventRecorder(store: store, logger: Logger(label: "test"))
        recorder.start()
        recorder.enqueue(EventBatch(changes: [Self.change(.new, S.record(1), jpeg: Data("x".utf8), bestChanged: true)]))
        #expect(Self.waitUntil { recorder.counts.failed == 1 })
        recorder.stop()
        #expect(recorder.counts.lastError != nil && store.totals.events == 0)
    }

    @Test func theSinkFollowsEveryFrameAndStoresWhatItSaw() throws {
        let dir = try TestPaths.temporaryDirectory()
        let store = EventStore(dataDirectory: dir)
        try store.load()
        let sink = EventSink(options: TrackerFrames.options(min: 0.2, endAfter: 0.5), store: store, publisher: nil,
                             logger: Logger(label: "test"))
        try sink.start()
        let jpeg = try Self.frameJPEG()
        // Frame times run ahead of the clock the sink's tick reads, so only the frames end events here.
        let start = MonotonicClock.nanos()
        for seq in UInt64(1)...30 {
            let t = Double(seq) * 0.1
            let visible = seq <= 10 || seq > 20  // two appearances, 1 s apart
            sink.deliver(ProcessedFrame(seq: seq, capturedAt: 1_800_000_000 + t, capturedNanos: start + UInt64(t * 1e9), width: 64,
                                        height: 48, jpeg: jpeg,
                                        detections: visible ? [TrackerFrames.logo(x: 0.25)] : []))
        }
        sink.stop()
        #expect(sink.counts == SinkCounts(delivered: 30, consumed: 30, skipped: 0))
        let events = store.list(EventQuery()).events
        #expect(events.count == 2)
        #expect(events.allSatisfy { $0.endTime != nil && $0.snapshotBytes == jpeg.count && $0.cropBytes != nil })
        #expect(events.map(\.startSeq) == [21, 1])
    }
}
