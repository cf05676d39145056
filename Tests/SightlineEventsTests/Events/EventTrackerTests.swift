import Foundation
import Testing
@testable import SightlineVision
@testable import SightlinePipeline
@testable import SightlineEvents
import SightlineTesting
import SightlineEventsTesting

@Suite struct EventTrackerTests {
    typealias F = TrackerFrames

    @Test func aTemplateBecomesAnEventAfterTheMinimumAndEndsAfterItsAbsence() {
        var tracker = EventTracker(options: F.options())
        var seq: UInt64 = 0
        var batches: [EventBatch] = []
        for i in 0...40 {
            let t = Double(i) * 0.1
            seq += 1
            batches.append(tracker.observe(F.frame(seq, at: t, i <= 10 ? [F.logo()] : [])))
        }
        let changes = batches.flatMap(\.changes)
        #expect(changes.map(\.type) == [.new, .end])
        let new = changes[0], end = changes[1]
        #expect(new.after.label == "logo" && new.after.kind == .template && new.after.camera == "test")
        #expect(abs(new.frameTime - (F.wallStart + 0.5)) < 1e-6, "new once it has lasted 0.5 s")
        #expect(new.before == new.after, "Frigate sends before == after for new")
        #expect(new.bestChanged)
        #expect(new.after.startSeq == 1 && new.after.endTime == nil)
        #expect(abs(end.after.endTime! - (F.wallStart + 1.0)) < 1e-6, "ends at its last sighting")
        #expect(abs(end.frameTime - (F.wallStart + 3.0)) < 1e-6, "said once absent for 2 s")
        #expect(end.after.id == new.after.id && end.after.lastSeq == 11 && end.after.frames == 11)
        let counts = batches.compactMap(\.counts)
        #expect(counts == [["logo": 1], ["logo": 0]])
        #expect(tracker.trackedCount == 0 && tracker.filtered == 0)
    }

    @Test func aFlickerShorterThanTheMinimumIsNoEvent() {
        var tracker = EventTracker(options: F.options(min: 1))
        var seq: UInt64 = 0
        let changes = F.run(&tracker, from: 0, to: 5, seq: &seq) { $0 < 0.6 ? [F.logo()] : [] }
        #expect(changes.isEmpty)
        #expect(tracker.filtered == 1)
    }

    @Test func aShortGapContinuesTheSameEvent() {
        var tracker = EventTracker(options: F.options(endAfter: 2))
        var seq: UInt64 = 0
        let changes = F.run(&tracker, from: 0, to: 8, seq: &seq) { t in (t < 2 || (t > 3 && t < 4)) ? [F.logo()] : [] }
        #expect(changes.filter { $0.type == .new }.count == 1)
        #expect(changes.filter { $0.type == .end }.count == 1)
        #expect(Set(changes.map(\.after.id)).count == 1)
    }

    @Test func updatesComeOnChangesAtMostEverySecondAndPeriodically() {
        var tracker = EventTracker(options: F.options(min: 0, update: 3, minUpdate: 1))
        var seq: UInt64 = 0
        // The score grows every frame for 2 s, then holds for 7 s.
        let changes = F.run(&tracker, from: 0, to: 9, seq: &seq) { t in [F.logo(min(0.95, 0.7 + t * 0.1))] }
        let times = changes.map { $0.frameTime - F.wallStart }
        #expect(changes.first?.type == .new && abs(times[0]) < 1e-6)
        let updates = changes.filter { $0.type == .update }
        let updateTimes = updates.map { $0.frameTime - F.wallStart }
        // The best score grows until 2.5 s: changes at most every second (1, 2, 3 s); then every 3 s (6, 9 s).
        #expect(updateTimes.count == 5, "\(updateTimes)")
        for (got, want) in zip(updateTimes, [1.0, 2.0, 3.0, 6.0, 9.0]) { #expect(abs(got - want) < 0.001, "\(updateTimes)") }
        for update in updates {
            #expect(update.before.best.score <= update.after.best.score)
            #expect(update.before.lastSeq < update.after.lastSeq)
        }
        #expect(updates[0].bestChanged && !updates[3].bestChanged)
    }

    @Test func aFaceNameChangeIsAnUpdateAndTheEventKeepsTheName() {
        var tracker = EventTracker(options: F.options(min: 0.2, update: 100, minUpdate: 1))
        var seq: UInt64 = 0
        let changes = F.run(&tracker, from: 0, to: 4, seq: &seq) { t in
            [F.face(7, name: t >= 2 && t < 3 ? "Ada" : nil, smile: t < 1 ? 0.1 : 0.9)]
        }
        #expect(changes.map(\.type) == [.new, .update])
        let update = changes[1]
        #expect(update.before.name == nil && update.after.name == "Ada" && update.after.nameConfidence == 0.7)
        #expect(abs(update.frameTime - (F.wallStart + 2)) < 0.051)
        #expect(update.after.label == "face" && update.after.trackId == 7)
        let end = tracker.finishAll(nowNanos: UInt64(5e9)).changes
        #expect(end.map(\.type) == [.end] && end[0].after.name == "Ada", "a name once given stays")
    }

    @Test func theBestFrameIsTheHighestScoreWithItsJPEGAndAttributes() {
        var tracker = EventTracker(options: F.options(min: 0))
        _ = tracker.observe(F.frame(1, at: 0, [F.face(3, score: 0.6, smile: 0.2)]))
        _ = tracker.observe(F.frame(2, at: 0.1, [F.face(3, score: 0.9, smile: 0.8)]))
        _ = tracker.observe(F.frame(3, at: 0.2, [F.face(3, score: 0.7, smile: 0.1)]))
        let end = tracker.finishAll(nowNanos: UInt64(2e9)).changes[0]
        #expect(end.after.best.seq == 2 && end.after.best.score == 0.9 && end.after.best.smile == 0.8)
        #expect(end.after.best.roll == 3 && end.after.best.yaw == -10 && end.after.best.eyesClosed == false)
        #expect(end.after.score == 0.7 && end.after.lastSeq == 3)
        #expect(end.bestJPEG == Data("frame 2".utf8))
        #expect(end.bestChanged, "the best frame changed since the new (seq 1)")
    }

    @Test func twoPlacesOfOneTemplateAreTwoEventsFollowedByPosition() {
        var tracker = EventTracker(options: F.options(min: 0))
        var seq: UInt64 = 0
        let changes = F.run(&tracker, from: 0, to: 1, seq: &seq) { t in
            [F.logo(0.9, x: 0.05 + t * 0.05), F.logo(0.8, x: 0.7 - t * 0.05)]
        }
        let news = changes.filter { $0.type == .new }
        #expect(news.count == 2)
        #expect(tracker.trackedCount == 2)
        let finished = tracker.finishAll(nowNanos: UInt64(3e9)).changes
        let byID = Dictionary(uniqueKeysWithValues: finished.map { ($0.after.id, $0.after) })
        for new in news {
            let end = byID[new.after.id]!
            #expect(abs(end.box.x - new.after.box.x) < 0.1, "each event kept its own place")
            #expect(end.frames == 11)
        }
    }

    @Test func eventsEndOnTicksWhenFramesStop() {
        var tracker = EventTracker(options: F.options(min: 0, endAfter: 1))
        _ = tracker.observe(F.frame(1, at: 0, [F.logo()]))
        let start = UInt64(1e9)  // the frame's monotonic time
        #expect(tracker.tick(nowNanos: start + 500_000_000).changes.isEmpty)
        let later = tracker.tick(nowNanos: start + 1_200_000_000)
        #expect(later.changes.map(\.type) == [.end])
        #expect(abs(later.changes[0].frameTime - (F.wallStart + 1.2)) < 1e-6)
        #expect(later.counts == ["logo": 0])
    }

    @Test func peopleAreCountedByNameAndTooManyThingsAreCountedNotFollowed() {
        var options = F.options(min: 0)
        options.maxTracked = 2
        var tracker = EventTracker(options: options)
        let batch = tracker.observe(F.frame(1, at: 0, [F.face(1, name: "Ada"), F.face(2, name: "Ada"), F.face(3)]))
        #expect(batch.changes.count == 2)
        #expect(batch.counts == ["face": 2])
        #expect(batch.people == ["Ada": 2])
        #expect(tracker.untracked == 1)
    }

    @Test func idsAreUniqueAndSafe() {
        var generator = SystemRandomNumberGenerator()
        let ids = (0..<200).map { _ in EventRecord.makeID(startTime: 1_800_000_000.25, using: &generator) }
        #expect(Set(ids).count == 200)
        #expect(ids.allSatisfy(EventRecord.isValidID))
        #expect(ids[0].hasPrefix("1800000000.250000-"))
        for bad in ["", "x", "../etc", "1.2-abc", "1800000000.250000-ABCDEF", "1800000000.250000-abcdef/..", "a.b-abcdef"] {
            #expect(!EventRecord.isValidID(bad), "\(bad)")
        }
    }
}
