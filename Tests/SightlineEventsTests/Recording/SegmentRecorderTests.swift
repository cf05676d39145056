import Foundation
import Logging
import Testing
@testable import SightlinePipeline
@testable import SightlineEvents
import SightlineTesting

@Suite("Recording: continuous segments")
struct SegmentRecorderTests {
    typealias F = RecordingFixtures

    @Test("segments are cut at keyframes with no frame lost between them, renamed with their length, and reload")
    func segmentsCutAtKeyframes() throws {
        let fixtures = try RecordingFixtures(keyframeEvery: 10)
        let dir = try TestPaths.temporaryDirectory()
        let limits = RecordingStore.Limits(maxAgeSeconds: 1e12, maxBytes: 1 << 40)
        let store = RecordingStore(dataDirectory: dir, limits: limits)
        try store.load()
        let recorder = SegmentRecorder(store: store, feed: fixtures.feed, segmentSeconds: 2, logger: Logger(label: "test"))
        recorder.start()
        try fixtures.publish(through: 5)   // deltas before... (frame 0 is a keyframe)
        for n in stride(from: 10, through: 75, by: 5) {
            try fixtures.publish(through: n)
            _ = F.eventually(2) { recorder.snapshot.state == "recording" }
        }
        #expect(F.eventually { recorder.snapshot.segments >= 3 })
        recorder.stop()
        let segments = store.list()
        #expect(segments.count >= 4 && segments.allSatisfy(\.complete))
        var frames = 0
        for segment in segments {
            let probe = try VideoFileProbe.read(store.path(segment.name))
            #expect(probe.keyframes >= 1)
            frames += probe.packets
            #expect(RecordingStore.parse(segment.name)?.milliseconds != nil)
        }
        #expect(frames == fixtures.published, "every frame in exactly one segment")
        // Consecutive: each segment starts where the previous one's frames end.
        for (a, b) in zip(segments, segments.dropFirst()) { #expect(abs(b.start - (a.start + a.duration)) < 0.06) }
        let again = RecordingStore(dataDirectory: dir, limits: limits)
        #expect(try again.load() == 0)
        #expect(again.list() == segments)
        #expect(again.list(from: segments[1].start + 0.5, to: segments[1].start + 0.6).map(\.name) == [segments[1].name])
    }

    @Test("names: what is ours parses, nothing else; retention deletes oldest first and never the newest")
    func namesAndRetention() throws {
        #expect(RecordingStore.parse("1800000000.123.mp4")! == (1_800_000_000.123, nil))
        #expect(RecordingStore.parse("1800000000.123_60033.mp4")! == (1_800_000_000.123, 60033))
        for bad in ["../x.mp4", "1800000000.12.mp4", "abc.mp4", "1800000000.123_.mp4", "1800000000.123.mp4.tmp", "1.123_1_2.mp4"] {
            #expect(RecordingStore.parse(bad) == nil, "\(bad)")
        }
        let dir = try TestPaths.temporaryDirectory()
        let store = RecordingStore(dataDirectory: dir, limits: .init(maxAgeSeconds: 3600, maxBytes: 25))
        try store.load()
        for (i, start) in [1000.0, 2000, 3000, 9000].enumerated() {
            let name = RecordingStore.name(start: start, milliseconds: 60000)
            try Data(count: 10).write(to: URL(fileURLWithPath: store.path(name)))
            store.add(.init(name: name, start: start, duration: 60, bytes: 10, complete: true))
            _ = i
        }
        let deleted = store.enforceRetention(now: 9100)
        // 40 bytes > 25: the oldest go; by age (older than an hour at 9100 s) 1000, 2000 and 3000 go; 9000 stays.
        #expect(deleted == ["1000.000_60000.mp4", "2000.000_60000.mp4", "3000.000_60000.mp4"])
        #expect(store.list().map(\.name) == ["9000.000_60000.mp4"])
        #expect(!FileManager.default.fileExists(atPath: store.path("1000.000_60000.mp4")))
    }
}
