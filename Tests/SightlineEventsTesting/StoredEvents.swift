import Foundation
import SightlineVision
import SightlineEvents

/// Event records and a store's files, for the tests.
package enum StoredEvents {
    package static func record(_ n: Int, kind: Detection.Kind = .template, label: String = "logo", name: String? = nil,
                       start: Double? = nil, open: Bool = false) -> EventRecord {
        let startTime = start ?? 1_800_000_000 + Double(n) * 10
        let box = NormalizedBox(x: 0.25, y: 0.25, w: 0.5, h: 0.5)
        var record = EventRecord(
            id: String(format: "%.6f", startTime) + "-" + String(format: "e%05d", n), camera: "test", kind: kind,
            label: kind == .face ? "face" : label, name: name, trackId: kind == .face ? n : nil, startTime: startTime,
            startSeq: UInt64(n * 100), lastTime: startTime + 3, lastSeq: UInt64(n * 100 + 90), frames: 90, score: 0.8,
            box: box, best: EventRecord.Best(seq: UInt64(n * 100 + 5), time: startTime + 0.2, score: 0.9, box: box),
            width: 64, height: 48)
        if !open { record.endTime = record.lastTime }
        return record
    }

    package static func files(_ store: EventStore) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: store.directory).sorted()
    }
}
