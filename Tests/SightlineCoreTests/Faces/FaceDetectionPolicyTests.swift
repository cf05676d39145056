import Testing
@testable import SightlineCore

@Suite("Face detection pacing")
struct FaceDetectionPolicyTests {
    @Test("fast while faces are tracked or the picture changes, slow when still or unwatched")
    func modes() {
        let policy = FaceDetectionPolicy(maxRate: 10, idleRate: 2)
        #expect(policy.mode(tracking: true, changed: false, watched: true) == .active)
        #expect(policy.mode(tracking: false, changed: true, watched: true) == .active)
        #expect(policy.mode(tracking: false, changed: false, watched: true) == .still)
        #expect(policy.mode(tracking: true, changed: true, watched: false) == .unwatched)
        #expect(policy.interval(.active) == 0.1)
        #expect(policy.interval(.still) == 0.5)
        #expect(policy.interval(.unwatched) == 0.5)
    }

    @Test("the change probe ignores sensor noise and sees a face-sized change")
    func changeProbe() throws {
        let probe = SceneChangeProbe()
        let scene = ImageBuffer(width: 640, height: 480, channels: 1)
        for i in 0..<scene.byteCount { scene.bytes[i] = UInt8(40 + (i % 640) / 4) }
        #expect(try probe.changed(scene))          // no reference yet
        probe.keepAsReference()
        #expect(try !probe.changed(scene))
        let noisy = ImageBuffer(width: 640, height: 480, channels: 1)
        noisy.bytes.update(from: scene.bytes, count: scene.byteCount)
        try ImageOps.addNoise(noisy, seed: 3, sigma: 8)
        #expect(try !probe.changed(noisy))
        // A 90x110 bright patch (a face at this size) changes whole cells.
        let face = ImageBuffer(width: 640, height: 480, channels: 1)
        face.bytes.update(from: scene.bytes, count: scene.byteCount)
        for y in 200..<310 { (face.bytes + y * face.stride + 300).update(repeating: 230, count: 90) }
        #expect(try probe.changed(face))
    }
}
