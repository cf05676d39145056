import Foundation
import Testing
@testable import SightlineVision
import SightlineTesting

@Suite struct FaceTrackerTests {
    static let frameCount = 300

    /// Left to right across a 640x480 frame with a gentle vertical wave.
    static func wandering(_ index: Int) -> SyntheticFace {
        let progress = Double(index) / Double(frameCount - 1)
        return SyntheticFace(centre: PixelPoint(x: 60 + 520 * progress, y: 240 + 60 * sin(progress * 2 * .pi)),
                             size: 90, roll: 10 * sin(progress * 4 * .pi), yaw: 15 * cos(progress * 3 * .pi))
    }

    @Test func oneFaceKeepsOneIdAcross300FramesWithNoiseAndMisses() {
        let tracker = FaceTracker()
        var random = SeededRandom(seed: 1)
        var ids = Set<Int>()
        var detectedFrames = 0, reportedFrames = 0
        for index in 0..<Self.frameCount {
            let truth = Self.wandering(index)
            // 15 % of detections missed at random, and a 10-frame blackout.
            let missed = random.chance(0.15) || (150..<160).contains(index)
            let observations = missed ? [] : [truth.observed(&random)]
            detectedFrames += observations.count
            let faces = tracker.update(observations, at: Frames.time(index))
            reportedFrames += faces.count
            ids.formUnion(faces.map(\.id))
        }
        #expect(ids.count == 1, "ids used: \(ids.sorted())")
        #expect(reportedFrames == detectedFrames, "every detection is reported on its frame")
    }

    @Test func twoFacesThatCrossKeepTheirIds() {
        let tracker = FaceTracker()
        var random = SeededRandom(seed: 2)
        var idsOfA = Set<Int>(), idsOfB = Set<Int>()
        var occludedFrames = 0
        for index in 0..<Self.frameCount {
            let progress = Double(index) / Double(Self.frameCount - 1)
            // A (near, larger) walks right; B (farther, smaller) walks left, a little higher.
            let a = SyntheticFace(centre: PixelPoint(x: 80 + 480 * progress, y: 250), size: 100)
            let b = SyntheticFace(centre: PixelPoint(x: 560 - 480 * progress, y: 225), size: 75)
            let overlap = TrackGeometry.intersectionOverUnion(a.box, b.box)
            // B is hidden behind A while they overlap a lot.
            let bHidden = overlap > 0.25
            if bHidden { occludedFrames += 1 }
            var observations = [a.observed(&random)]
            if !bHidden { observations.append(b.observed(&random)) }
            observations.shuffle(using: &random)
            let faces = tracker.update(observations, at: Frames.time(index))
            if let face = reported(faces, nearest: a) { idsOfA.insert(face.id) }
            if !bHidden, let face = reported(faces, nearest: b) { idsOfB.insert(face.id) }
        }
        #expect(occludedFrames > 5, "the scene really hides B for a while")
        #expect(idsOfA.count == 1, "A's ids: \(idsOfA.sorted())")
        #expect(idsOfB.count == 1, "B's ids: \(idsOfB.sorted())")
        #expect(idsOfA.isDisjoint(with: idsOfB))
    }

    @Test func aTrackEndsAfterItsAbsenceAndAReturningFaceGetsANewId() throws {
        var options = FaceTracker.Options()
        options.maxAbsence = 1.0
        let tracker = FaceTracker(options: options)
        var random = SeededRandom(seed: 3)
        let face = SyntheticFace(centre: PixelPoint(x: 320, y: 240), size: 90)
        var index = 0
        func see(_ frames: Int) -> Set<Int> {
            var ids = Set<Int>()
            for _ in 0..<frames {
                ids.formUnion(tracker.update([face.observed(&random)], at: Frames.time(index)).map(\.id))
                index += 1
            }
            return ids
        }
        func miss(_ frames: Int) {
            for _ in 0..<frames { _ = tracker.update([], at: Frames.time(index)); index += 1 }
        }
        let first = see(30)
        miss(15)  // half a second: a short gap
        let afterShortGap = see(30)
        miss(60)  // two seconds: the track ends
        #expect(tracker.activeTrackIDs.isEmpty)
        let afterLongAbsence = see(30)
        #expect(first.count == 1)
        #expect(afterShortGap == first, "a short gap keeps the id")
        #expect(afterLongAbsence.count == 1)
        #expect(afterLongAbsence.isDisjoint(with: first), "a returning face gets a new id")
    }

    @Test func aNewFaceGetsANewId() {
        let tracker = FaceTracker()
        var random = SeededRandom(seed: 4)
        let a = SyntheticFace(centre: PixelPoint(x: 150, y: 240), size: 90)
        let b = SyntheticFace(centre: PixelPoint(x: 450, y: 240), size: 90)
        let before = tracker.update([a.observed(&random)], at: 0).map(\.id)
        let after = tracker.update([a.observed(&random), b.observed(&random)], at: Frames.time(1)).map(\.id)
        #expect(before.count == 1 && after.count == 2)
        #expect(Set(after).contains(before[0]))
    }

    @Test func detectionEveryThirdFrameStillGivesABoxOnEveryFrame() throws {
        let tracker = FaceTracker()
        var random = SeededRandom(seed: 5)
        let detectEvery = 3
        var worstIoU = 1.0
        var ids = Set<Int>()
        for index in 0..<Self.frameCount {
            let truth = Self.wandering(index)
            let time = Frames.time(index)
            let faces = index % detectEvery == 0
                ? tracker.update([truth.observed(&random)], at: time)
                : tracker.predict(at: time)
            let face = try #require(faces.first, "frame \(index) has a face")
            #expect(face.isPredicted == (index % detectEvery != 0))
            ids.insert(face.id)
            worstIoU = min(worstIoU, TrackGeometry.intersectionOverUnion(face.observation.box, truth.box))
        }
        #expect(ids.count == 1)
        #expect(worstIoU >= 0.6, "worst IoU of a carried or detected box: \(worstIoU)")
    }

    @Test func rollIsSmoothedAcrossTheWrapAt180() {
        let tracker = FaceTracker()
        var random = SeededRandom(seed: 6)
        let face = SyntheticFace(centre: PixelPoint(x: 320, y: 240), size: 90, roll: 179)
        var rolls: [Double] = []
        for index in 0..<60 {
            let observed = face.observed(&random, jitter: 1, angleNoise: 4)  // 175...183, so it wraps to -177
            rolls.append(contentsOf: tracker.update([observed], at: Frames.time(index)).compactMap(\.observation.roll))
        }
        // Smoothed the short way round: always near ±180, never near 0.
        #expect(rolls.count == 60)
        #expect(rolls.allSatisfy { abs($0) > 170 }, "rolls: \(rolls.map { Int($0) })")
        #expect(rolls.allSatisfy { $0 > -180 && $0 <= 180 })
    }

    /// A head tilting steadily at 20°/s, read (±1°) on every third frame and
    /// carried on the frames between: the roll keeps up with the turn.
    @Test func aSteadyTurnIsFollowedWithoutTrailing() {
        let tracker = FaceTracker()
        var random = SeededRandom(seed: 8)
        var errors: [Double] = []
        for index in 0..<90 {
            let truth = -30 + 20 * Frames.time(index)
            let face = SyntheticFace(centre: PixelPoint(x: 320, y: 240), size: 90, roll: truth)
            if index % 3 == 0 { _ = tracker.update([face.observed(&random, jitter: 1, angleNoise: 1)], at: Frames.time(index)) }
            let carried = tracker.predict(at: Frames.time(index)).first?.observation.roll
            if index >= 30, let carried { errors.append(abs(carried - truth)) }
        }
        #expect(errors.count == 60)
        let sorted = errors.sorted()
        #expect(sorted[sorted.count / 2] <= 1.5, "median error \(sorted[sorted.count / 2])°")
        #expect(sorted.last! <= 4, "worst error \(sorted.last!)°")
    }

    @Test func yawIsSmoothed() {
        let tracker = FaceTracker()
        var random = SeededRandom(seed: 7)
        let face = SyntheticFace(centre: PixelPoint(x: 320, y: 240), size: 90, yaw: 10)
        var raw: [Double] = [], smoothed: [Double] = []
        for index in 0..<100 {
            let observed = face.observed(&random, angleNoise: 8)
            raw.append(observed.yaw ?? 0)
            smoothed.append(contentsOf: tracker.update([observed], at: Frames.time(index)).compactMap(\.observation.yaw))
        }
        func spread(_ values: [Double]) -> Double {
            let tail = values.suffix(80)
            let mean = tail.reduce(0, +) / Double(tail.count)
            return (tail.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(tail.count)).squareRoot()
        }
        #expect(spread(smoothed) < spread(raw) * 0.7, "raw \(spread(raw)), smoothed \(spread(smoothed))")
    }

    @Test func smileIsSmoothedAndClosedEyesAreTakenAsRead() throws {
        let tracker = FaceTracker()
        let box = PixelRect(x: 300.0, y: 200.0, w: 90.0, h: 90.0)
        var reported: [TrackedFace] = []
        for index in 0..<6 {
            let blink = index == 5
            let face = FaceObservation(box: box, score: 0.9, smile: index < 4 ? 0.0 : 1.0, eyesClosed: blink)
            reported = tracker.update([face], at: Frames.time(index))
        }
        let face = try #require(reported.first).observation
        let smile = try #require(face.smile)
        #expect(smile > 0 && smile < 1, "two smiling readings after four neutral ones move the smile part way: \(smile)")
        #expect(face.eyesClosed == true, "a blink shows on the frame it is read")
    }
}
