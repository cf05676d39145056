import Foundation

/// One live pass's budget for a crowd (`YuNetDetector.Options.crowdFaces`):
/// a pass whose tracked faces number at least `crowdFaces` is a crowd's. Its
/// crops (confirming a missed track, reading a face upright) are cut at
/// `cropUpscale` times the face's own pixels rather than at the tracked crop
/// size, at most `cropsPerPass` are run, the faces read longest ago first,
/// and it reads fewer faces' attributes. A pass with fewer tracked faces
/// runs as many crops as its faces need.
///
/// Made anew for each pass (its crops left are that pass's).
struct CrowdBudget {
    /// Whether this pass is a crowd's.
    let isCrowd: Bool
    /// Crops this pass may still run (unbounded outside a crowd).
    private(set) var cropsLeft: Int
    let cropUpscale: Double
    /// The side of a crop outside a crowd (`trackedCropSize`), and the largest a crowd's may be.
    let largestCropSide: Int
    /// Faces read for attributes in a crowd's pass.
    let crowdAttributesPerPass: Int

    init(crowdFaces: Int?, tracked: Int, cropsPerPass: Int, cropUpscale: Double, largestCropSide: Int,
         crowdAttributesPerPass: Int) {
        isCrowd = crowdFaces.map { tracked >= $0 } ?? false
        cropsLeft = isCrowd ? cropsPerPass : Int.max
        self.cropUpscale = cropUpscale
        self.largestCropSide = largestCropSide
        self.crowdAttributesPerPass = crowdAttributesPerPass
    }

    init(_ options: YuNetDetector.Options, tracked: Int) {
        self.init(crowdFaces: options.crowdFaces, tracked: tracked, cropsPerPass: options.crowdCropsPerPass,
                  cropUpscale: options.crowdCropUpscale, largestCropSide: options.trackedCropSize,
                  crowdAttributesPerPass: options.crowdAttributesPerPass)
    }

    /// Takes one crop from the budget; false when it is spent.
    mutating func takeCrop() -> Bool {
        guard cropsLeft > 0 else { return false }
        if isCrowd { cropsLeft -= 1 }
        return true
    }

    /// How many faces the frame-wide pass keeps before `kept` chooses: all of
    /// them in a crowd.
    func searchLimit(_ limit: Int) -> Int { isCrowd ? Int.max : limit }

    /// The pass's faces within `limit`. A crowd with more faces in view than
    /// the limit keeps the faces it tracks (the best-scored of the rest fill
    /// what is left), rather than the best-scored whatever they are: scores
    /// of faces that alike trade places from pass to pass, and each trade
    /// would end a track and start one (a new id, a person check, an upright reading).
    func kept(_ faces: [FaceObservation], hints: [FaceObservation], limit: Int) -> [FaceObservation] {
        isCrowd && faces.count > limit ? Self.trackedFirst(faces, hints: hints, limit: limit) : faces
    }

    /// `items` in the order their crops are taken: in a crowd, those read
    /// longest ago first (`readAt`: an item's last reading); otherwise as given.
    func cropOrder<T>(_ items: [T], readAt: (T) -> Double) -> [T] {
        isCrowd ? zip(items, items.map(readAt)).sorted { $0.1 < $1.1 }.map(\.0) : items
    }

    /// The side of the crop for `face`: nil (the tracked crop size) outside a crowd.
    func cropSide(for face: FaceObservation) -> Int? {
        isCrowd ? Self.cropSide(for: face, upscale: cropUpscale, largest: largestCropSide) : nil
    }

    /// Faces read for attributes in this pass: `perPass` (nil: all), a crowd's fewer.
    func attributesPerPass(_ perPass: Int?) -> Int {
        isCrowd ? crowdAttributesPerPass : perPass ?? Int.max
    }

    /// A crowd's crop side for `face`: the smallest of `cropSides` that
    /// holds `upscale` times its crop's own pixels, at most `largest`. Few
    /// sides, because OpenCV's dnn makes its layers' buffers anew whenever
    /// the input size changes.
    static func cropSide(for face: FaceObservation, upscale: Double, largest: Int) -> Int {
        let pixels = max(face.box.w, face.box.h) * LandmarkRefiner.trackedContext * upscale
        let side = cropSides.first { Double($0) >= pixels } ?? cropSides.last ?? 320
        return min(largest, side)
    }
    static let cropSides = [160, 224, 320]

    /// The first `limit` of `faces` (in score order), those a hint overlaps first.
    static func trackedFirst(_ faces: [FaceObservation], hints: [FaceObservation], limit: Int) -> [FaceObservation] {
        let tracked = faces.map { FaceGeometry.sameFace($0.box, in: hints, box: { $0.box }) != nil }
        return Array((faces.indices.filter { tracked[$0] } + faces.indices.filter { !tracked[$0] })
            .prefix(limit).map { faces[$0] })
    }
}
