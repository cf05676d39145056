import Foundation
import Testing
@testable import SightlineVision
import SightlineTesting

@Suite struct RecognitionTests {
    @Test func twoEnrolledPeopleAreRecognisedOnHeldBackCrops() throws {
        let (recognizer, ada, bob) = try EnrolledFaces.enrolled()
        var right = 0, total = 0
        var distances: [String: [Double]] = [:]
        for (photo, name) in [(ada, "Ada"), (bob, "Bob")] {
            for answer in try EnrolledFaces.answers(recognizer, photo.crops(seeds: EnrolledFaces.testSeeds)) {
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
        let (recognizer, _, _) = try EnrolledFaces.enrolled()
        let cy = try FacePhoto.load(FacePhoto.cy)
        let answers = try EnrolledFaces.answers(recognizer, cy.crops(seeds: EnrolledFaces.testSeeds))
        let named = answers.filter { $0?.name != nil }.count
        print("stranger: \(named)/\(answers.count) named; distances \(answers.map { Int($0?.distance ?? -1) })")
        #expect(named <= answers.count / 2, "a stranger was given a name \(named) of \(answers.count) times")
    }

    @Test func confidenceIsBetweenZeroAndOne() throws {
        let (recognizer, ada, _) = try EnrolledFaces.enrolled()
        for answer in try EnrolledFaces.answers(recognizer, ada.crops(seeds: 2000..<2005)) {
            let confidence = try #require(answer?.confidence)
            #expect((0...1).contains(confidence))
        }
    }

    @Test func persistenceSurvivesAReloadFromTheDataDirectory() throws {
        let directory = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (recognizer, ada, bob) = try EnrolledFaces.enrolled(store: PeopleStore(dataDirectory: directory))
        let probes = try ada.crops(seeds: EnrolledFaces.testSeeds.prefix(5)) + bob.crops(seeds: EnrolledFaces.testSeeds.prefix(5))
        let before = try EnrolledFaces.answers(recognizer, probes)

        let store = PeopleStore(dataDirectory: directory)
        let modelBytes = (try? FileManager.default.attributesOfItem(atPath: store.modelPath)[.size] as? Int) ?? 0
        print("model file: \(modelBytes) bytes for \(recognizer.people.map(\.samples).reduce(0, +)) samples")
        #expect(modelBytes > 0)
        let reloaded = try FaceRecognizer(store: store)
        #expect(reloaded.people == recognizer.people)
        #expect(reloaded.people.map(\.name) == ["Ada", "Bob"])
        #expect(try EnrolledFaces.answers(reloaded, probes) == before)

        // Deleting a person retrains without them, and that survives a reload too.
        #expect(try reloaded.remove(named: "bob"))
        let afterDelete = try FaceRecognizer(store: PeopleStore(dataDirectory: directory))
        #expect(afterDelete.people.map(\.name) == ["Ada"])
        let bobNow = try EnrolledFaces.answers(afterDelete, bob.crops(seeds: EnrolledFaces.testSeeds.prefix(10)))
        #expect(bobNow.allSatisfy { $0?.name != "Bob" })
        #expect(afterDelete.people.first?.samples == EnrolledFaces.enrollSeeds.count)
    }
}
