import Foundation
import SightlineVision

/// A small seeded generator (SplitMix64) so synthetic runs repeat exactly.
package struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64
    package init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }
    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    package mutating func uniform(_ range: ClosedRange<Double>) -> Double { Double.random(in: range, using: &self) }
    package mutating func chance(_ p: Double) -> Bool { uniform(0...1) < p }
}

/// A face's true position at some time, and a noisy detection of it.
package struct SyntheticFace {
    package var centre: PixelPoint
    package var size: Double
    package var roll: Double = 0
    package var yaw: Double = 0

    package init(centre: PixelPoint, size: Double, roll: Double = 0, yaw: Double = 0) {
        self.centre = centre
        self.size = size
        self.roll = roll
        self.yaw = yaw
    }

    package var box: PixelRect<Double> { PixelRect(x: centre.x - size / 2, y: centre.y - size / 2, w: size, h: size) }

    /// What a detector with a few pixels of jitter would report.
    package func observed(_ random: inout SeededRandom, jitter: Double = 3, angleNoise: Double = 3) -> FaceObservation {
        let s = size + random.uniform(-jitter...jitter)
        let c = PixelPoint(x: centre.x + random.uniform(-jitter...jitter), y: centre.y + random.uniform(-jitter...jitter))
        let eyeOffset = s * 0.2
        let landmarks = FaceLandmarks(rightEye: PixelPoint(x: c.x - eyeOffset, y: c.y - s * 0.1),
                                      leftEye: PixelPoint(x: c.x + eyeOffset, y: c.y - s * 0.1))
        return FaceObservation(box: PixelRect(x: c.x - s / 2, y: c.y - s / 2, w: s, h: s), score: 0.9, landmarks: landmarks,
                               roll: TrackGeometry.wrapDegrees(roll + random.uniform(-angleNoise...angleNoise)),
                               yaw: yaw + random.uniform(-angleNoise...angleNoise))
    }
}

package enum Frames {
    package static let rate = 30.0
    package static func time(_ index: Int) -> TimeInterval { Double(index) / rate }
}

/// The reported face nearest to a true position (within half its size).
package func reported(_ faces: [TrackedFace], nearest truth: SyntheticFace) -> TrackedFace? {
    let near = faces.map { face -> (TrackedFace, Double) in
        let c = TrackGeometry.centre(face.observation.box)
        return (face, ((c.x - truth.centre.x) * (c.x - truth.centre.x) + (c.y - truth.centre.y) * (c.y - truth.centre.y)).squareRoot())
    }.min { $0.1 < $1.1 }
    guard let near, near.1 <= truth.size / 2 else { return nil }
    return near.0
}
