import Foundation
import SightlinePipeline

/// The last seconds of encoded video, kept so a clip can start before its
/// event: access units of the main rendition, oldest first, always from a
/// keyframe (a clip must start on one), spanning at least `keepSeconds`
/// back from the newest when the stream has run that long. Memory is about
/// (keepSeconds + one keyframe interval) of the stream's bitrate: at
/// 2 Mbit/s and 3 s + 2 s, 1.25 MB.
///
/// A value type owned by the clip recorder's thread.
struct PreCaptureRing {
    let keepSeconds: Double
    private(set) var units: [VideoFeed.Unit] = []
    private(set) var bytes = 0

    init(keepSeconds: Double) {
        self.keepSeconds = max(0, keepSeconds)
    }

    /// Adds the newest unit. A delta with no keyframe before it in the ring
    /// (the start, or after `reset`) is not kept: nothing could decode it.
    mutating func append(_ unit: VideoFeed.Unit) {
        guard unit.isKeyframe || !units.isEmpty else { return }
        units.append(unit)
        bytes += unit.data.count
        trim()
    }

    /// Forgets everything (units were lost: what follows does not continue what is kept).
    mutating func reset() {
        units.removeAll()
        bytes = 0
    }

    /// Drops whole keyframe intervals from the front while the next
    /// keyframe still reaches `keepSeconds` back from the newest unit.
    private mutating func trim() {
        guard let newest = units.last else { return }
        let horizon = newest.capturedAt - keepSeconds
        var cut = 0
        var i = 1
        while i < units.count {
            if units[i].isKeyframe {
                guard units[i].capturedAt <= horizon else { break }
                cut = i
            }
            i += 1
        }
        guard cut > 0 else { return }
        bytes -= units[..<cut].reduce(0) { $0 + $1.data.count }
        units.removeFirst(cut)
    }

    /// Where a clip of an event that began at `time` starts: the newest
    /// keyframe at or before `time - preCapture`, else the oldest kept (the
    /// stream has not run that long). Nil when nothing is kept.
    func startIndex(forEventAt time: Double, preCapture: Double) -> Int? {
        guard !units.isEmpty else { return nil }
        let wanted = time - preCapture
        return units.indices.last { units[$0].isKeyframe && units[$0].capturedAt <= wanted } ?? 0
    }

    /// Seconds from the oldest kept unit to the newest.
    var span: Double {
        guard let first = units.first, let last = units.last else { return 0 }
        return last.capturedAt - first.capturedAt
    }
}
