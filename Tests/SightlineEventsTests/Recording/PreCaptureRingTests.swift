import Foundation
import Testing
@testable import SightlinePipeline
@testable import SightlineEvents

@Suite("Recording: pre-capture ring")
struct PreCaptureRingTests {
    /// Unit `n` at n/10 s, a keyframe every `every`.
    func unit(_ n: Int, every: Int = 10, bytes: Int = 100) -> VideoFeed.Unit {
        VideoFeed.Unit(index: UInt64(n + 1), seq: UInt64(n + 1), capturedNanos: UInt64(n) * 100_000_000,
                       capturedAt: 1000 + Double(n) / 10, json: Data(), data: Data(count: bytes), isKeyframe: n % every == 0)
    }

    @Test("keeps whole keyframe intervals covering keepSeconds back from the newest unit, always from a keyframe")
    func keepsFromAKeyframe() {
        var ring = PreCaptureRing(keepSeconds: 2)
        for n in 3..<10 { ring.append(unit(n)) }
        #expect(ring.units.isEmpty, "deltas before the first keyframe cannot be decoded")
        for n in 10..<45 { ring.append(unit(n)) }
        // Newest at 4.4 s: 2 s back is 2.4 s; the newest keyframe at or before it is frame 20.
        #expect(ring.units.first?.seq == 21 && ring.units.first?.isKeyframe == true)
        #expect(ring.units.count == 25 && ring.bytes == 2500)
        #expect(abs(ring.span - 2.4) < 1e-9)
    }

    @Test("a clip starts on the newest keyframe at or before pre-capture, else on the oldest kept")
    func startIndex() {
        var ring = PreCaptureRing(keepSeconds: 5)
        for n in 0..<60 { ring.append(unit(n)) }
        let first = ring.units.first!.seq
        // Event at 5.5 s with 1 s pre-capture: keyframe at 4.0 s (frame 40).
        #expect(ring.units[ring.startIndex(forEventAt: 1005.5, preCapture: 1)!].seq == 41)
        #expect(ring.units[ring.startIndex(forEventAt: 1005.5, preCapture: 0)!].seq == 51)
        // Wanted before anything kept: the oldest (a keyframe).
        #expect(ring.units[ring.startIndex(forEventAt: 1000.5, preCapture: 3)!].seq == first)
        ring.reset()
        #expect(ring.startIndex(forEventAt: 1005, preCapture: 1) == nil && ring.bytes == 0)
    }
}
