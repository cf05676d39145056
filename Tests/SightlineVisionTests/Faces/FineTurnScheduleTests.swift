import Testing
@testable import SightlineVision

@Suite("Fine turn schedule")
struct FineTurnScheduleTests {
    @Test("a round of fine passes looks first for the tilt of the faces already tracked, then the next nearest")
    func roundsStartNearTheTrackedTilt() {
        var schedule = FineTurnSchedule(turns: [0, 30, -30])
        func round(_ rolls: [Double?], from first: Int = 0) -> [Double] {
            let hints = rolls.map { FaceObservation(box: PixelRect(x: 100, y: 100, w: 60, h: 60), score: 0.9, roll: $0) }
            return (first..<first + 3).map { schedule.tilt(forPass: $0, hints: hints) }
        }
        #expect(round([]) == [0, 30, -30])
        #expect(round([24, 28, 31]) == [30, 0, -30])
        #expect(round([-22, 4, -26]) == [-30, 0, 30])
        #expect(round([2]) == [0, 30, -30])
        // The faces still missing lean further than those found: a group read at 12° is
        // looked for at +30° first, one at 4° upright.
        #expect(round([12]) == [30, 0, -30])
        #expect(round([-4, 4, 2]) == [0, 30, -30])
        // Later rounds (one fine pass a second) look again at what is tracked then.
        #expect(round([-40], from: 3) == [-30, 0, 30])
        // The order holds through a round even as the tracked faces change.
        let tilted = [FaceObservation(box: PixelRect(x: 0, y: 0, w: 50, h: 50), score: 0.9, roll: 30)]
        #expect(schedule.tilt(forPass: 6, hints: tilted) == 30)
        #expect(schedule.tilt(forPass: 7, hints: []) == 0)
    }

    @Test("tracked faces not read upright yet lend their landmarks' roll; without turns every fine pass is upright")
    func landmarkRollsAndNoTurns() {
        var schedule = FineTurnSchedule(turns: [0, 30, -30])
        // Eyes on a line 20° down to the image's right: a face rolled about 20°.
        let landmarks = FaceLandmarks(rightEye: PixelPoint(x: 100, y: 100), leftEye: PixelPoint(x: 147, y: 117.1))
        let unread = FaceObservation(box: PixelRect(x: 80, y: 80, w: 80, h: 80), score: 0.9, landmarks: landmarks)
        #expect(schedule.tilt(forPass: 0, hints: [unread]) == 30)
        var none = FineTurnSchedule(turns: [])
        #expect(none.tilt(forPass: 0, hints: [unread]) == 0 && none.tilt(forPass: 5, hints: []) == 0)
    }
}
