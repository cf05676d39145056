import Testing
@testable import SightlineVision

@Suite("Attribute schedule")
struct AttributeScheduleTests {
    static func face(x: Double, width: Double = 60) -> FaceObservation {
        FaceObservation(box: PixelRect(x: x, y: 0, w: width, h: width), score: 0.9)
    }

    /// A reader that gives every face `smile` and `eyesClosed`, and counts its reads.
    final class Reader {
        var reads: [Double] = []
        var smile = 0.5
        var eyesClosed: Bool? = false
        func read(_ face: FaceObservation) -> FaceObservation {
            reads.append(face.box.x)
            var face = face
            face.smile = smile
            face.eyesClosed = eyesClosed
            return face
        }
    }

    @Test("without pacing every face is read on every pass and nothing is kept")
    func unpaced() {
        var schedule = AttributeSchedule(everySeconds: 0)
        let reader = Reader()
        let faces = [Self.face(x: 0), Self.face(x: 100)]
        for now in [0.0, 0.01] {
            #expect(schedule.pass(faces, at: now, budget: 1, read: reader.read).allSatisfy { $0.smile == 0.5 })
        }
        #expect(reader.reads.count == 4)
        #expect(schedule.readings.isEmpty)
    }

    @Test("a face read moments ago carries that reading; once everySeconds has nearly passed it is read again")
    func pacing() {
        var schedule = AttributeSchedule(everySeconds: 1)
        let reader = Reader()
        _ = schedule.pass([Self.face(x: 100)], at: 10, budget: 4, read: reader.read)
        reader.smile = 0.9
        let carried = schedule.pass([Self.face(x: 104)], at: 10.5, budget: 4, read: reader.read)
        #expect(reader.reads == [100])
        #expect(carried.first?.smile == 0.5 && carried.first?.eyesClosed == false)
        #expect(schedule.readings.first?.at == 10 && schedule.readings.first?.box.x == 104)
        // Due within a fifth of the interval.
        let again = schedule.pass([Self.face(x: 104)], at: 10.8, budget: 4, read: reader.read)
        #expect(reader.reads == [100, 104])
        #expect(again.first?.smile == 0.9)
        // A face no reading overlaps is read at once.
        _ = schedule.pass([Self.face(x: 104), Self.face(x: 400)], at: 10.9, budget: 4, read: reader.read)
        #expect(reader.reads == [100, 104, 400])
    }

    @Test("a pass reads at most its budget, never-read faces first, then the largest; the others carry their reading or have none yet")
    func budget() {
        var schedule = AttributeSchedule(everySeconds: 60)
        let reader = Reader()
        let faces = zip([0.0, 100, 200, 300, 400, 500], [50.0, 80, 60, 90, 70, 40]).map { Self.face(x: $0, width: $1) }
        var judged: [Int] = []
        for (pass, now) in [0.0, 1, 2].enumerated() {
            let read = schedule.pass(faces, at: now, budget: 2, read: reader.read)
            judged.append(read.filter { $0.smile != nil }.count)
            #expect(reader.reads.count == 2 * (pass + 1))
        }
        #expect(reader.reads == [100, 300, 200, 400, 0, 500])
        #expect(judged == [2, 4, 6])
        // All due again a minute on: the largest first.
        _ = schedule.pass(faces, at: 100, budget: 2, read: reader.read)
        #expect(reader.reads.suffix(2) == [100, 300])
        #expect(schedule.due(faces, at: 100.5, budget: 10) == [0, 2, 4, 5], "the four read a minute and more ago")
    }

    @Test("eyes alternating between two readings do not flicker: a new state shows once two readings agree")
    func steadyEyes() {
        var schedule = AttributeSchedule(everySeconds: 1e-9)
        let reader = Reader()
        let shown = [false, true, false, true, true, true, false, false].enumerated().map { (pass, closed) -> Bool? in
            reader.eyesClosed = closed
            return schedule.pass([Self.face(x: 0)], at: Double(pass), budget: 1, read: reader.read).first?.eyesClosed
        }
        #expect(shown == [false, false, false, false, true, true, true, false])
    }

    @Test("a face whose readings agree waits twice as long each time, up to steadyFactor; a reading that differs brings it back to everySeconds")
    func steadyFaces() {
        var schedule = AttributeSchedule(everySeconds: 1, steadyFactor: 4)
        let reader = Reader()
        reader.smile = 0.3
        var readAt: [Int] = []
        for now in 0...14 {
            if now == 8 { reader.smile = 0.8 }
            let before = reader.reads.count
            let faces = schedule.pass([Self.face(x: 100)], at: Double(now), budget: 4, read: reader.read)
            if reader.reads.count > before { readAt.append(now) }
            #expect(faces.first?.smile == (readAt.last! >= 8 ? 0.8 : 0.3))
        }
        // Waits 1, 2, 4, 4; the smile read at 11 differs: 1, then 2 again.
        #expect(readAt == [0, 1, 3, 7, 11, 12, 14])
        // Eyes that change count as a change too; a smile within 0.1 on the same side of 0.5 does not.
        let last = schedule.readings[0]
        #expect(AttributeSchedule.agrees(smile: 0.75, eyes: false, with: last))
        #expect(!AttributeSchedule.agrees(smile: 0.8, eyes: true, with: last))
        #expect(!AttributeSchedule.agrees(smile: 0.45, eyes: false, with: last))
        #expect(!AttributeSchedule.agrees(smile: nil, eyes: false, with: last))
    }
}
