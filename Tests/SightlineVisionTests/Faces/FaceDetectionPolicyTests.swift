import Testing
@testable import SightlineVision

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

    @Test("fine passes: never the first on a new picture (large faces at once), the next three, then one a period")
    func finePasses() {
        let policy = FaceDetectionPolicy(maxRate: 10, idleRate: 2, fineEverySeconds: 1)
        #expect(!policy.fine(passesOnPicture: 0, secondsSinceFine: 100))
        #expect((1...3).allSatisfy { policy.fine(passesOnPicture: $0, secondsSinceFine: 0.1) })
        #expect(!policy.fine(passesOnPicture: 4, secondsSinceFine: 0.5))
        #expect(policy.fine(passesOnPicture: 40, secondsSinceFine: 1))
        let onlyAfterCuts = FaceDetectionPolicy(maxRate: 10, idleRate: 2, fineEverySeconds: 0)
        #expect(!onlyAfterCuts.fine(passesOnPicture: 40, secondsSinceFine: 100))
        #expect(onlyAfterCuts.fine(passesOnPicture: 2, secondsSinceFine: 0))
    }

    @Test("the change probe ignores sensor noise and sees a face-sized change")
    func changeProbe() throws {
        let probe = SceneChangeProbe()
        let scene = ImageBuffer(width: 640, height: 480, channels: 1)
        for i in 0..<scene.byteCount { scene.bytes[i] = UInt8(40 + (i % 640) / 4) }
        #expect(try probe.read(scene).changed)          // no reference yet
        probe.keepAsReference()
        #expect(try !probe.read(scene).changed)
        let noisy = ImageBuffer(width: 640, height: 480, channels: 1)
        noisy.bytes.update(from: scene.bytes, count: scene.byteCount)
        try ImageOps.addNoise(noisy, seed: 3, sigma: 8)
        #expect(try !probe.read(noisy).changed)
        // A 90x110 bright patch (a face at this size) changes whole cells.
        let face = ImageBuffer(width: 640, height: 480, channels: 1)
        face.bytes.update(from: scene.bytes, count: scene.byteCount)
        for y in 200..<310 { (face.bytes + y * face.stride + 300).update(repeating: 230, count: 90) }
        #expect(try probe.read(face).changed)
    }

    @Test("a cut is most of the picture changing from one frame to the next; noise, a pan and a face are not")
    func cutProbe() throws {
        let probe = SceneChangeProbe()
        let scene = ImageBuffer(width: 640, height: 480, channels: 1)
        for i in 0..<scene.byteCount { scene.bytes[i] = UInt8(40 + (i % 640) / 4) }
        #expect(try !probe.read(scene).cut)        // nothing before it
        let noisy = ImageBuffer(width: 640, height: 480, channels: 1)
        noisy.bytes.update(from: scene.bytes, count: scene.byteCount)
        try ImageOps.addNoise(noisy, seed: 5, sigma: 8)
        #expect(try !probe.read(noisy).cut)
        // The scene moved 6 px to the side (a pan or a drift between two frames).
        let moved = ImageBuffer(width: 640, height: 480, channels: 1)
        for y in 0..<480 { for x in 0..<640 { moved.bytes[y * 640 + x] = UInt8(40 + min(639, x + 6) / 4) } }
        #expect(try !probe.read(moved).cut)
        let face = ImageBuffer(width: 640, height: 480, channels: 1)
        face.bytes.update(from: moved.bytes, count: moved.byteCount)
        for y in 200..<310 { (face.bytes + y * face.stride + 300).update(repeating: 230, count: 90) }
        #expect(try !probe.read(face).cut)
        // Another picture (the gradient the other way round): a cut, once.
        let other = ImageBuffer(width: 640, height: 480, channels: 1)
        for i in 0..<other.byteCount { other.bytes[i] = UInt8(200 - (i % 640) / 4) }
        #expect(try probe.read(other).cut)
        #expect(try !probe.read(other).cut)
    }
}
