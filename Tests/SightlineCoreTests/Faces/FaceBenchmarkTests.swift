import Foundation
import Testing
@testable import SightlineCore
import SightlineTesting

@Suite("sightline bench --faces")
struct FaceBenchmarkTests {
    @Test("times YuNet, YuNet with refinement and Haar on a letterboxed photo, each finding its face")
    func timesEveryDetector() throws {
        let photo = FaceTestData.faces + "/grace_hopper.jpg"
        let report = try FaceBenchmark(inputPath: photo, width: 640, height: 480, frames: 3,
                                       modelPath: FaceTestData.modelPath()).run()
        #expect(report.detectors.map(\.detector) == ["yunet-320", "yunet-320+refine", "haar"])
        for timing in report.detectors {
            #expect(timing.frames == 3)
            #expect(timing.facesPerFrame == 1, "\(timing.detector) should find Grace Hopper's face on every frame")
            #expect(timing.msPerFrame.p50 > 0 && timing.msPerFrame.p50 <= timing.msPerFrame.p99)
        }
        #expect(report.detectors[0].attributesMsPerFace != nil)
        // YuNet's passes part by part: the plain one is its frame-wide pass
        // alone; the refined one reads its face by crops, checks it and reads its attributes.
        let plain = try #require(report.detectors[0].passMsPerFrame)
        #expect(Set(plain.keys) == ["detect", "crops", "personCheck", "attributes", "uprightCrops"])
        #expect(plain["detect"]!.mean > 0 && plain["attributes"]!.mean == 0 && plain["personCheck"]!.mean == 0)
        let refined = try #require(report.detectors[1].passMsPerFrame)
        #expect(["detect", "crops", "personCheck", "attributes", "uprightCrops"].allSatisfy { refined[$0]!.mean > 0 })
        #expect(refined["detect"]!.mean + refined["crops"]!.mean + refined["personCheck"]!.mean
                + refined["attributes"]!.mean <= report.detectors[1].msPerFrame.mean + 0.01)
        let counts = try #require(report.detectors[1].passCountsPerFrame)
        #expect(counts["rereads"] == 1 && counts["personChecks"] == 1 && counts["refused"] == 0 && counts["attributeReads"] == 1)
        #expect(report.detectors[2].passMsPerFrame == nil, "Haar has no pass profile")
    }

    @Test("without a model only Haar is timed")
    func haarAlone() throws {
        let report = try FaceBenchmark(inputPath: FaceTestData.faces + "/grace_hopper.jpg", width: 320, height: 240,
                                       frames: 1, modelPath: nil).run()
        #expect(report.detectors.map(\.detector) == ["haar"])
    }
}
