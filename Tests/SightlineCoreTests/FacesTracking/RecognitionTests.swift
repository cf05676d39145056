import Foundation
import Testing
@testable import SightlineCore
@testable import SightlineVision
@testable import SightlineSupport
@testable import SightlineHTTP

@Suite struct RecognitionTests {
    static let enrollSeeds: Range<UInt64> = 0..<20
    /// Held back: different augmentations, never enrolled.
    static let testSeeds: Range<UInt64> = 1000..<1030

    /// Enrolls Ada and Bob from augmented crops of their photos.
    static func enrolled(store: PeopleStore? = nil) throws -> (FaceRecognizer, FacePhoto, FacePhoto) {
        let ada = try FacePhoto.load(FacePhoto.ada), bob = try FacePhoto.load(FacePhoto.bob)
        let recognizer = try FaceRecognizer(store: store)
        try recognizer.enroll(ada.crops(seeds: enrollSeeds), as: "Ada")
        try recognizer.enroll(bob.crops(seeds: enrollSeeds), as: "Bob")
        return (recognizer, ada, bob)
    }

    static func answers(_ recognizer: FaceRecognizer, _ crops: [ImageBuffer]) throws -> [FaceIdentity?] {
        try crops.map { try recognizer.identify($0) }
    }

    @Test func twoEnrolledPeopleAreRecognisedOnHeldBackCrops() throws {
        let (recognizer, ada, bob) = try Self.enrolled()
        var right = 0, total = 0
        var distances: [String: [Double]] = [:]
        for (photo, name) in [(ada, "Ada"), (bob, "Bob")] {
            for answer in try Self.answers(recognizer, photo.crops(seeds: Self.testSeeds)) {
                total += 1
                if answer?.name == name { right += 1 }
                distances[name, default: []].append(answer?.distance ?? .infinity)
            }
        }
        let accuracy = Double(right) / Double(total)
        print("recognition: \(right)/\(total) right; distances \(distances.mapValues { $0.map { Int($0) } })")
        #expect(accuracy >= 0.9, "recognised \(right) of \(total) held-back crops")
    }

    @Test func aStrangerIsMostlyUnknown() throws {
        let (recognizer, _, _) = try Self.enrolled()
        let cy = try FacePhoto.load(FacePhoto.cy)
        let answers = try Self.answers(recognizer, cy.crops(seeds: Self.testSeeds))
        let named = answers.filter { $0?.name != nil }.count
        print("stranger: \(named)/\(answers.count) named; distances \(answers.map { Int($0?.distance ?? -1) })")
        #expect(named <= answers.count / 2, "a stranger was given a name \(named) of \(answers.count) times")
    }

    @Test func confidenceIsBetweenZeroAndOne() throws {
        let (recognizer, ada, _) = try Self.enrolled()
        for answer in try Self.answers(recognizer, ada.crops(seeds: 2000..<2005)) {
            let confidence = try #require(answer?.confidence)
            #expect((0...1).contains(confidence))
        }
    }

    @Test func persistenceSurvivesAReloadFromTheDataDirectory() throws {
        let directory = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (recognizer, ada, bob) = try Self.enrolled(store: PeopleStore(dataDirectory: directory))
        let probes = try ada.crops(seeds: Self.testSeeds.prefix(5)) + bob.crops(seeds: Self.testSeeds.prefix(5))
        let before = try Self.answers(recognizer, probes)

        let store = PeopleStore(dataDirectory: directory)
        let modelBytes = (try? FileManager.default.attributesOfItem(atPath: store.modelPath)[.size] as? Int) ?? 0
        print("model file: \(modelBytes) bytes for \(recognizer.people.map(\.samples).reduce(0, +)) samples")
        #expect(modelBytes > 0)
        let reloaded = try FaceRecognizer(store: store)
        #expect(reloaded.people == recognizer.people)
        #expect(reloaded.people.map(\.name) == ["Ada", "Bob"])
        #expect(try Self.answers(reloaded, probes) == before)

        // Deleting a person retrains without them, and that survives a reload too.
        #expect(try reloaded.remove(named: "bob"))
        let afterDelete = try FaceRecognizer(store: PeopleStore(dataDirectory: directory))
        #expect(afterDelete.people.map(\.name) == ["Ada"])
        let bobNow = try Self.answers(afterDelete, bob.crops(seeds: Self.testSeeds.prefix(10)))
        #expect(bobNow.allSatisfy { $0?.name != "Bob" })
        #expect(afterDelete.people.first?.samples == Self.enrollSeeds.count)
    }
}
