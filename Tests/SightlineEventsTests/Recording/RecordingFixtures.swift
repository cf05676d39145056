import Foundation
@testable import SightlineVision
@testable import SightlinePipeline
@testable import SightlineEvents
import SightlineTesting

/// Real H.264 access units for the recording tests: 64x48 pictures encoded
/// by x264 at 10 fps with a keyframe every `keyframeEvery` frames, each with
/// the Sightline SEI of its frame, published into a `VideoFeed` with
/// capture times that say where it is in the stream (no clock involved).
final class RecordingFixtures {
    let feed = VideoFeed(capacity: 400)
    let fps = 10.0
    let start = 1_800_000_000.0
    private let encoder: H264Encoder
    private let keyframeEvery: Int
    private(set) var published = 0

    init(keyframeEvery: Int = 10) throws {
        var settings = H264Encoder.Settings()
        settings.keyframeSeconds = 100   // keyframes only when this fixture asks
        encoder = try H264Encoder(width: 64, height: 48, fps: 10, settings: settings)
        self.keyframeEvery = keyframeEvery
    }

    /// Capture time (Unix seconds) of frame `n` (0, 1, ...).
    func time(_ n: Int) -> Double { start + Double(n) / fps }

    /// Encodes and publishes frames up to (not including) `n`.
    func publish(through n: Int) throws {
        while published < n {
            let index = published
            let image = ImageBuffer(width: 64, height: 48)
            for i in stride(from: 0, to: image.stride * image.height, by: 3) { image.bytes[i] = UInt8((i / 3 + index * 7) & 0xFF) }
            let encoded = try encoder.encode(image, forceKeyframe: index % keyframeEvery == 0)
            let boxes = SEIBoxes.Payload(seq: UInt64(index + 1), capturedAt: time(index), width: 64, height: 48, detections: [])
            let unit = try VideoAccessUnit(encoded: encoded, boxes: boxes)
            feed.publish(.main, seq: UInt64(index + 1), capturedNanos: UInt64(Double(index) / fps * 1e9), capturedAt: time(index),
                         json: Data("{}".utf8), data: unit.data, isKeyframe: unit.isKeyframe, width: 64, height: 48)
            published += 1
        }
    }

    /// A keyframe of another picture size (a new source), as frame `published`.
    func publishResizedKeyframe() throws {
        let other = try H264Encoder(width: 48, height: 32, fps: 10)
        let image = ImageBuffer(width: 48, height: 32)
        let encoded = try other.encode(image, forceKeyframe: true)
        let index = published
        let boxes = SEIBoxes.Payload(seq: UInt64(index + 1), capturedAt: time(index), width: 48, height: 32, detections: [])
        let unit = try VideoAccessUnit(encoded: encoded, boxes: boxes)
        feed.publish(.main, seq: UInt64(index + 1), capturedNanos: UInt64(Double(index) / fps * 1e9), capturedAt: time(index),
                     json: Data("{}".utf8), data: unit.data, isKeyframe: true, width: 48, height: 32)
        published += 1
    }

    /// An event record for something seen from frame `first` to frame `last`.
    func record(_ name: String, first: Int, last: Int, ended: Bool) -> EventRecord {
        let box = NormalizedBox(x: 0.25, y: 0.25, w: 0.5, h: 0.5)
        var record = EventRecord(id: String(format: "%.6f", time(first)) + "-" + name, camera: "test", kind: .template,
                                 label: "logo", startTime: time(first), startSeq: UInt64(first + 1), lastTime: time(last),
                                 lastSeq: UInt64(last + 1), frames: last - first + 1, score: 0.9, box: box,
                                 best: EventRecord.Best(seq: UInt64(first + 1), time: time(first), score: 0.9, box: box),
                                 width: 64, height: 48)
        if ended { record.endTime = time(last) }
        return record
    }

    static func batch(_ record: EventRecord, _ type: EventChange.Kind) -> EventBatch {
        EventBatch(changes: [EventChange(type: type, before: record, after: record, frameTime: record.lastTime, frameNanos: 0,
                                         bestJPEG: Data(), bestChanged: type == .new)])
    }

    /// Waits (bounded) for `condition`, checking every 10 ms: the recorder's
    /// thread does its work when woken, and this is how long that may take.
    static func eventually(_ seconds: Double = 10, _ condition: () -> Bool) -> Bool {
        waitUntil(seconds: seconds, condition)
    }
}
