import Testing
@testable import SightlineVision

@Suite("Person check schedule")
struct PersonCheckScheduleTests {
    static func face(x: Double, width: Double) -> FaceObservation {
        FaceObservation(box: PixelRect(x: x, y: 0, w: width, h: width), score: 0.9)
    }

    @Test("tracked faces are kept unchecked; new ones are checked the largest first, up to perPass; the rest are left out")
    func budget() {
        let faces = [Self.face(x: 0, width: 40), Self.face(x: 100, width: 80), Self.face(x: 200, width: 60),
                     Self.face(x: 300, width: 90), Self.face(x: 400, width: 70)]
        let hints = [FaceObservation(box: PixelRect(x: 302, y: 1, w: 90, h: 90), score: 0.9)]
        #expect(PersonCheckSchedule(perPass: 2).plan(faces, hints: hints) == [.leftOut, .check, .leftOut, .tracked, .check])
        #expect(PersonCheckSchedule(perPass: nil).plan(faces, hints: hints) == [.check, .check, .check, .tracked, .check])
        #expect(PersonCheckSchedule(perPass: 0).plan(faces, hints: []) == Array(repeating: .leftOut, count: 5))
        #expect(PersonCheckSchedule(perPass: 1).plan([], hints: hints).isEmpty)
    }
}
