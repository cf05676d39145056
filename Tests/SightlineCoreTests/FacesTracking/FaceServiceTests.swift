import Foundation
import Testing
@testable import SightlineCore
@testable import SightlineVision
@testable import SightlinePipeline
@testable import SightlineHTTP
@testable import SightlineEvents

/// Drives FaceService the way the pipeline does: one tracked face per frame,
/// the frame being an augmented view of a real photo.
struct ServiceDriver {
    let service: FaceService
    var time: TimeInterval = 0
    static let frameInterval = 0.2  // beyond the crop spacing, so each frame is kept

    /// Shows the service `frames` views of `photo` as track `id`; returns the names it gave.
    @discardableResult
    mutating func show(_ photo: FacePhoto, as id: Int, seeds: Range<UInt64>, yaw: Double = 0) throws -> [String?] {
        var names: [String?] = []
        for seed in seeds {
            let view = try AugmentedView(photo, seed: seed)
            var observation = view.observation
            observation.yaw = yaw
            let faces = service.process([TrackedFace(id: id, observation: observation, isPredicted: false)],
                                        frame: view.frame, at: time)
            time += Self.frameInterval * 3  // past the recognition interval: every frame is recognised
            names.append(faces.first?.identity?.name)
        }
        return names
    }
}

@Suite struct FaceServiceTests {
    @Test func feedbackTurnsAWrongAnswerRight() throws {
        var options = FaceRecognizer.Options()
        options.unknownDistance = .infinity  // with only Ada known, everyone is "Ada"
        let recognizer = try FaceRecognizer(options: options, store: nil)
        let ada = try FacePhoto.load(FacePhoto.ada), bob = try FacePhoto.load(FacePhoto.bob)
        try recognizer.enroll(ada.crops(seeds: RecognitionTests.enrollSeeds), as: "Ada")
        var driver = ServiceDriver(service: FaceService(recognizer: recognizer))

        let before = try driver.show(bob, as: 1, seeds: 100..<110)
        #expect(before.allSatisfy { $0 == "Ada" }, "the wrong answer first: \(before)")

        let result = try driver.service.feedback(trackID: 1, correct: false, name: "Bob").get()
        #expect(result.name == "Bob" && result.learned > 0)

        let after = try driver.show(bob, as: 1, seeds: RecognitionTests.testSeeds)
        let right = after.filter { $0 == "Bob" }.count
        print("after feedback (\(result.learned) crops): \(right)/\(after.count) Bob")
        #expect(right >= after.count * 9 / 10, "after feedback: \(after)")
        // Ada is still Ada.
        let adaNow = try driver.show(ada, as: 2, seeds: RecognitionTests.testSeeds.prefix(10))
        #expect(adaNow.filter { $0 == "Ada" }.count >= 9, "Ada after Bob's feedback: \(adaNow)")
    }

    @Test func confirmingAddsSamplesToTheCurrentName() throws {
        let (recognizer, ada, _) = try RecognitionTests.enrolled()
        var driver = ServiceDriver(service: FaceService(recognizer: recognizer))
        try driver.show(ada, as: 3, seeds: 200..<206)
        let before = driver.service.people().first { $0.name == "Ada" }?.samples ?? 0
        let result = try driver.service.feedback(trackID: 3, correct: true, name: nil).get()
        #expect(result.name == "Ada")
        #expect(result.samples == before + result.learned && result.learned > 0)
    }

    @Test func turnedFacesGiveNoCropsToEnroll() throws {
        let recognizer = try FaceRecognizer(store: nil)
        let ada = try FacePhoto.load(FacePhoto.ada)
        var driver = ServiceDriver(service: FaceService(recognizer: recognizer))
        try driver.show(ada, as: 4, seeds: 0..<5, yaw: 25)  // recognisable, not frontal enough to learn
        let result = driver.service.name(trackID: 4, as: "Ada")
        #expect(result.failure?.status == 409)
        #expect(driver.service.name(trackID: 77, as: "Ada").failure?.status == 404)
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
