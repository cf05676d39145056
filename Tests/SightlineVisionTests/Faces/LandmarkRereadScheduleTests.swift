import Testing
@testable import SightlineVision

@Suite("Landmark re-read schedule")
struct LandmarkRereadScheduleTests {
    typealias Reading = LandmarkRereadSchedule.Reading

    static func schedule(every: Double = 0.1, atOnce: Int? = nil, steadyFactor: Double = 5) -> LandmarkRereadSchedule {
        LandmarkRereadSchedule(everySeconds: every, steadyFactor: steadyFactor, steadyRollDegrees: 1.5,
                               newFacesReadAtOnce: atOnce)
    }

    static func reading(tracked: Double?, reading: Double?, previous: Double?, waited: Double = 0.5,
                        width: Double = 100) -> Reading {
        Reading(box: PixelRect(x: 0, y: 0, w: width, h: width), at: 0, tracked: tracked, reading: reading, previousReading: previous,
                waited: waited)
    }

    static func isDue(_ decision: LandmarkRereadSchedule.Decision) -> Bool {
        if case .due = decision { return true }
        return false
    }

    @Test("a face whose tracked roll stands still is re-read less and less often, to 20 times less; one that turns, at its own pace")
    func steadyFacesWaitLonger() {
        let schedule = Self.schedule(steadyFactor: 20)
        func interval(_ last: Reading, _ tracked: Double) -> Double { schedule.interval(last, tracked: tracked) }
        let still = Self.reading(tracked: 10, reading: 10.4, previous: 9.8)
        #expect(interval(still, 10.5) == 2.0, "readings agree, the track agrees and stands")
        // The wait grows four times with each steady reading, from the short one to the long one.
        let waits = [0.1, 0.4, 1.6].map { interval(Self.reading(tracked: 10, reading: 10.4, previous: 9.8, waited: $0), 10.5) }
        #expect(waits == [0.4, 1.6, 2.0])
        #expect(interval(still, 12) == 0.1, "the track moved since")
        #expect(interval(Self.reading(tracked: 10, reading: 10.4, previous: 6), 10) == 0.1,
                "the head turned between the last two readings")
        #expect(interval(Self.reading(tracked: 14, reading: 10, previous: 10), 14) == 0.1,
                "the last reading corrected the track")
        #expect(interval(Self.reading(tracked: 12, reading: 10, previous: 10), 12) == 2.0,
                "2 degrees between a reading and its track is a reading's scatter")
        #expect(interval(Self.reading(tracked: 10, reading: 10, previous: nil), 10) == 2.0,
                "a first reading whose track has not turned since")
        #expect(interval(Self.reading(tracked: nil, reading: 10, previous: nil, waited: 0.1), 10.5) == 0.4,
                "a new face's first reading, its track started from it and not turned")
        #expect(interval(Self.reading(tracked: nil, reading: 10, previous: nil, waited: 0.1), 12) == 0.1,
                "a new face whose track turned since its first reading")
        #expect(interval(Self.reading(tracked: 179.5, reading: -179.8, previous: 179.9), -179.5) == 2.0,
                "across ±180°")
        // A small face's readings scatter more: a 40-pixel face is held to 2.5 times the tolerance.
        #expect(interval(Self.reading(tracked: 10, reading: 13.5, previous: 10), 10) == 0.1,
                "3.5° between readings is a turn for a 100-pixel face")
        let small = Self.reading(tracked: 10, reading: 13.5, previous: 10, width: 40)
        #expect(interval(small, 10) == 2.0, "and scatter for a 40-pixel one")
        #expect(interval(small, 14) == 0.1, "the track turning 4° is a turn for it too")
    }

    @Test("a tracked face read moments ago carries its reading (moved to its box); once its interval has nearly passed it is due")
    func readMomentsAgoIsCarried() throws {
        var schedule = Self.schedule()
        schedule.beginPass()
        guard case .due(let last, let interval) = schedule.decide(PixelRect(x: 100, y: 100, w: 60, h: 60), tracked: nil, isNew: true, now: 10)
        else { Issue.record("a new face is due"); return }
        #expect(last == nil && interval == nil)
        schedule.reading(isNew: true)
        schedule.record(Reading(box: PixelRect(x: 100, y: 100, w: 60, h: 60), at: 10, tracked: nil, reading: 5, previousReading: nil))
        schedule.endPass()
        #expect(schedule.lastReadAt(PixelRect(x: 102, y: 101, w: 60, h: 60)) == 10)
        #expect(schedule.lastReadAt(PixelRect(x: 400, y: 100, w: 60, h: 60)) == -.infinity)
        // The next pass, 50 ms on, tracked at 5°: not due (carried to where the face is now).
        schedule.beginPass()
        let moved = PixelRect(x: 104.0, y: 100.0, w: 60.0, h: 60.0)
        guard case .notDue = schedule.decide(moved, tracked: 5, isNew: false, now: 10.05)
        else { Issue.record("read 50 ms ago: not due"); return }
        schedule.endPass()
        let carried = try #require(schedule.readings.first)
        #expect(carried.box.x == 104 && carried.at == 10 && carried.reading == 5)
        // Due within a fifth of its interval (0.1 s: an unsteady face, one reading).
        schedule.beginPass()
        guard case .due(let again, let waited) = schedule.decide(moved, tracked: 5, isNew: false, now: 10.085)
        else { Issue.record("due at 85 ms"); return }
        #expect(again?.reading == 5 && waited == 0.1)
        // A face without a tracked roll (reported before its reading) is due at once.
        #expect(Self.isDue(schedule.decide(moved, tracked: nil, isNew: false, now: 10.01)))
    }

    @Test("faces new to the tracker past newFacesReadAtOnce wait for the next pass; tracked faces do not count")
    func newFacesReadAtOnce() {
        var schedule = Self.schedule(atOnce: 1)
        schedule.beginPass()
        #expect(Self.isDue(schedule.decide(PixelRect(x: 0, y: 0, w: 50, h: 50), tracked: nil, isNew: true, now: 0)))
        schedule.reading(isNew: true)
        guard case .newFaceWaits = schedule.decide(PixelRect(x: 100, y: 0, w: 50, h: 50), tracked: nil, isNew: true, now: 0)
        else { Issue.record("the second new face waits"); return }
        #expect(Self.isDue(schedule.decide(PixelRect(x: 200, y: 0, w: 50, h: 50), tracked: 3, isNew: false, now: 0)))
        schedule.reading(isNew: false)
        #expect(schedule.newFacesRead == 1)
        schedule.endPass()
        schedule.beginPass()
        #expect(Self.isDue(schedule.decide(PixelRect(x: 100, y: 0, w: 50, h: 50), tracked: nil, isNew: true, now: 0.1)))
        // Without a cap every new face is read at once.
        var all = Self.schedule(atOnce: nil)
        all.beginPass()
        for x in [0.0, 100, 200] {
            #expect(Self.isDue(all.decide(PixelRect(x: x, y: 0, w: 50, h: 50), tracked: nil, isNew: true, now: 0)))
            all.reading(isNew: true)
        }
    }

    @Test("only what a pass recorded or carried stands for the next; a face carried without a reading has none")
    func passesReplaceReadings() {
        var schedule = Self.schedule()
        schedule.beginPass()
        schedule.record(Reading(box: PixelRect(x: 0, y: 0, w: 50, h: 50), at: 1, tracked: nil, reading: 2, previousReading: nil))
        schedule.record(Reading(box: PixelRect(x: 100, y: 0, w: 50, h: 50), at: 1, tracked: nil, reading: 4, previousReading: nil))
        schedule.endPass()
        #expect(schedule.readings.count == 2)
        schedule.beginPass()
        schedule.carry(schedule.last(PixelRect(x: 101, y: 0, w: 50, h: 50)), to: PixelRect(x: 101, y: 0, w: 50, h: 50))
        schedule.carry(nil, to: PixelRect(x: 300, y: 0, w: 50, h: 50))
        schedule.endPass()
        #expect(schedule.readings.map(\.box.x) == [101])
        #expect(schedule.last(PixelRect(x: 0, y: 0, w: 50, h: 50)) == nil)
        #expect(!Self.schedule(every: 0).isPaced && schedule.isPaced)
    }
}
