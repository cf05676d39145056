import Foundation
import SightlineVision
import SightlinePipeline
import SightlineEvents

/// Frames for the tracker: time `t` seconds after a fixed start, a JPEG that
/// says which frame it is, and the given detections.
package enum TrackerFrames {
    package static let wallStart = 1_800_000_000.0

    package static func frame(_ seq: UInt64, at t: Double, _ detections: [Detection]) -> ProcessedFrame {
        ProcessedFrame(seq: seq, capturedAt: wallStart + t, capturedNanos: UInt64((t * 1e9).rounded()) + 1_000_000_000,
                       width: 640, height: 480, jpeg: Data("frame \(seq)".utf8), detections: detections)
    }

    package static func logo(_ score: Double = 0.9, x: Double = 0.1, label: String = "logo") -> Detection {
        Detection.template(label: label, score: score, scale: 1, angle: 0, box: NormalizedBox(x: x, y: 0.2, w: 0.2, h: 0.2))
    }

    package static func face(_ id: Int, score: Double = 0.8, name: String? = nil, smile: Double? = nil) -> Detection {
        Detection(kind: .face, id: id, score: score, box: NormalizedBox(x: 0.5, y: 0.3, w: 0.1, h: 0.15),
                  roll: 3, yaw: -10, name: name, nameConfidence: name == nil ? nil : 0.7, smile: smile, eyesClosed: false)
    }

    package static func options(min: Double = 0.5, endAfter: Double = 2, update: Double = 5, minUpdate: Double = 1) -> EventTracker.Options {
        var options = EventTracker.Options()
        options.camera = "test"
        options.minSeconds = min
        options.endAfterSeconds = endAfter
        options.updateSeconds = update
        options.minUpdateSeconds = minUpdate
        return options
    }

    /// Runs frames every `step` seconds from `from` to `to` with `detections`; returns every change.
    package static func run(_ tracker: inout EventTracker, from: Double, to: Double, step: Double = 0.1, seq: inout UInt64,
                    _ detections: (Double) -> [Detection]) -> [EventChange] {
        var changes: [EventChange] = []
        let count = Int(((to - from) / step).rounded())
        for i in 0...count {
            let t = from + Double(i) * step
            seq += 1
            changes += tracker.observe(frame(seq, at: t, detections(t))).changes
        }
        return changes
    }
}
