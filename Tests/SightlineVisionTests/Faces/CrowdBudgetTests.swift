import Testing
@testable import SightlineVision

@Suite("A crowd's budget")
struct CrowdBudgetTests {
    static func budget(tracked: Int, crowdFaces: Int? = 8, crops: Int = 2) -> CrowdBudget {
        CrowdBudget(crowdFaces: crowdFaces, tracked: tracked, cropsPerPass: crops, cropUpscale: 2,
                    largestCropSide: 320, crowdAttributesPerPass: 1)
    }

    static func face(x: Double, width: Double = 50, score: Double = 0.9) -> FaceObservation {
        FaceObservation(box: PixelRect(x: x, y: 0, w: width, h: width), score: score)
    }

    @Test("fewer tracked faces than crowdFaces (or none set) is no crowd: every crop, the tracked crop size, the given order and attribute budget")
    func noCrowd() {
        for var budget in [Self.budget(tracked: 7), Self.budget(tracked: 50, crowdFaces: nil)] {
            #expect(!budget.isCrowd)
            #expect((0..<100).allSatisfy { _ in budget.takeCrop() })
            #expect(budget.cropSide(for: Self.face(x: 0, width: 40)) == nil)
            #expect(budget.cropOrder([1, 2, 3], readAt: { -Double($0) }) == [1, 2, 3])
            #expect(budget.attributesPerPass(4) == 4 && budget.attributesPerPass(nil) == Int.max)
            #expect(budget.searchLimit(10) == 10)
        }
    }

    @Test("a crowd's pass runs at most cropsPerPass crops, the faces read longest ago first, and reads crowdAttributesPerPass faces")
    func crowdCrops() {
        var budget = Self.budget(tracked: 8, crops: 2)
        #expect(budget.isCrowd)
        #expect([budget.takeCrop(), budget.takeCrop(), budget.takeCrop()] == [true, true, false])
        #expect(budget.cropsLeft == 0)
        let lastRead: [String: Double] = ["a": 3, "b": -.infinity, "c": 1]
        #expect(budget.cropOrder(["a", "b", "c"], readAt: { lastRead[$0]! }) == ["b", "c", "a"])
        #expect(budget.attributesPerPass(4) == 1)
        #expect(budget.searchLimit(10) == Int.max)
    }

    @Test("a crowd's crops are cut at twice a face's own pixels, on few sides (160, 224, 320), never past the tracked crop size")
    func cropSides() {
        let budget = Self.budget(tracked: 8)
        func side(_ width: Double) -> Int? {
            budget.cropSide(for: FaceObservation(box: PixelRect(x: 0, y: 0, w: width, h: width * 1.2), score: 1))
        }
        #expect(side(40) == 160)
        #expect(side(60) == 224)
        #expect(side(100) == 320)
        #expect(side(400) == 320)
        let small = CrowdBudget(crowdFaces: 8, tracked: 8, cropsPerPass: 2, cropUpscale: 2, largestCropSide: 224,
                                crowdAttributesPerPass: 1)
        #expect(small.cropSide(for: FaceObservation(box: PixelRect(x: 0, y: 0, w: 100, h: 120), score: 1)) == 224)
    }

    @Test("a crowd with more faces than the limit keeps its tracked faces first (in score order), then the best-scored others")
    func trackedFacesFirst() {
        let faces = (0..<6).map { Self.face(x: Double($0) * 100, score: 0.99 - Double($0) * 0.01) }
        // Tracks on the 3rd, 5th and 6th faces (moved a little since).
        let hints = [2, 4, 5].map { FaceObservation(box: PixelRect(x: Double($0) * 100 + 3, y: 2, w: 50, h: 50), score: 0.9) }
        #expect(CrowdBudget.trackedFirst(faces, hints: hints, limit: 4).map(\.box.x) == [200, 400, 500, 0])
        #expect(CrowdBudget.trackedFirst(faces, hints: [], limit: 3).map(\.box.x) == [0, 100, 200])
        #expect(Self.budget(tracked: 8).kept(faces, hints: hints, limit: 4).map(\.box.x) == [200, 400, 500, 0])
        #expect(Self.budget(tracked: 8).kept(faces, hints: hints, limit: 6).count == 6, "within the limit: all, as found")
        #expect(Self.budget(tracked: 3).kept(Array(faces.prefix(4)), hints: hints, limit: 4).map(\.box.x) == [0, 100, 200, 300])
    }
}
