import Foundation
import Testing
@testable import SightlineVision
@testable import SightlinePipeline
import SightlineTesting

@Suite struct FaceServiceTests {
    @Test func feedbackTurnsAWrongAnswerRight() throws {
        var options = FaceRecognizer.Options()
        options.unknownDistance = .infinity  // with only Ada known, everyone is "Ada"
        let recognizer = try FaceRecognizer(options: options, store: nil)
        let ada = try FacePhoto.load(FacePhoto.ada), bob = try FacePhoto.load(FacePhoto.bob)
        try recognizer.enroll(ada.crops(seeds: EnrolledFaces.enrollSeeds), as: "Ada")
        var driver = ServiceDriver(service: FaceService(recognizer: recognizer))

        let before = try driver.show(bob, as: 1, seeds: 100..<110)
        #expect(before.allSatisfy { $0 == "Ada" }, "the wrong answer first: \(before)")

        let result = try driver.service.feedback(trackID: 1, correct: false, name: "Bob").get()
        #expect(result.name == "Bob" && result.learned > 0)

        let after = try driver.show(bob, as: 1, seeds: EnrolledFaces.testSeeds)
        let right = after.filter { $0 == "Bob" }.count
        print("after feedback (\(result.learned) crops): \(right)/\(after.count) Bob")
        #expect(right >= after.count * 9 / 10, "after feedback: \(after)")
        // Ada is still Ada.
        let adaNow = try driver.show(ada, as: 2, seeds: EnrolledFaces.testSeeds.prefix(10))
        #expect(adaNow.filter { $0 == "Ada" }.count >= 9, "Ada after Bob's feedback: \(adaNow)")
    }

    @Test func confirmingAddsSamplesToTheCurrentName() throws {
        let (recognizer, ada, _) = try EnrolledFaces.enrolled()
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
