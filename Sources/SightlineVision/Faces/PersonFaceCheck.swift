import CSightlineOpenCV
import Foundation

/// Tells a person's face from an animal's (or a thing's) that the face
/// detector took for one, by a second look: dlib's HOG frontal face
/// detector, trained only on people, on the candidate's upright crop
/// (`UprightFaceCrop`). YuNet scores a dog's face 0.85; the HOG detector's
/// score there is far below what it gives people's faces (docs/faces.md).
///
/// With YuNet's 640 model a dog's face (dlib's dogs.jpg) scores 0.17 at
/// HOG, above people's faces turned or small (0.05). A score under
/// `doubtfulScore` is therefore taken for a person's only when dlib's
/// 68-point fit on the crop also puts the nose tip (point 30) where the
/// detector put it, within `maxNoseOffset` interocular distances: the fit
/// follows a person's face, and on the dog it lands 0.24 away; the people's
/// faces of the labelled and shared photos read 0.18 at most (0.16 with a
/// score under `doubtfulScore`). Without the shape model the score decides
/// alone.
///
/// Belongs to the thread of the detector that owns it (dlib's detector keeps
/// scratch memory).
package final class PersonFaceCheck {
    /// HOG scores at least this are a person's face. dlib reports a face
    /// from 0; on the upright crops of the 80 people's faces YuNet finds in
    /// the labelled photos the lowest was -0.03 (a face turned about 50°),
    /// the next 0.27; dlib's dog photo scored -0.53.
    static let minScore = -0.3
    /// Detections are looked for down to this score (a miss reads as this).
    static let searchThreshold = -1.5
    /// Scores under this need the 68-point fit's nose to agree (see above).
    static let doubtfulScore = 0.3
    static let maxNoseOffset = 0.2
    /// The scan starts this many levels down dlib's pyramid (each 5/6 of the
    /// last). The crop puts the face at a box of 128 of its 192 pixels, which
    /// the detector (its box about 72 pixels at the level that finds it)
    /// finds at levels 2-4: on the 172 checks of the labelled and shared
    /// photos (people's faces and animals') every best hit was 105, 125 or
    /// 150 pixels wide, none 72 or 87 (levels 0 and 1). Those two levels
    /// were three fifths of the scan's pixels; the levels scanned are the
    /// full scan's own, so their scores are unchanged.
    static let skippedLevels = 2

    private let handle: OpaquePointer
    /// dlib's 68-point model, nil when it does not load.
    private let shapeModel = try? FaceShapeModel.shared()

    package init() throws {
        var detector: OpaquePointer?
        try OpenCVError.check { slcv_hog_faces_create(&detector, $0) }
        guard let detector else { throw OpenCVError(code: -1, message: "the HOG face detector was not made") }
        handle = detector
    }

    deinit { slcv_hog_faces_release(handle) }

    /// Whether the check takes `face` for a person's, on its upright crop
    /// from `gray`. A face without landmarks (none from YuNet) is kept.
    /// The crop's time is added to `profile`'s `uprightCropSeconds`.
    package func isPerson(_ face: FaceObservation, gray: ImageBuffer, profile: inout FacePassProfile) throws -> Bool {
        guard let landmarks = face.landmarks,
              let crop = try profile.timed(\.uprightCropSeconds, { try UprightFaceCrop(gray: gray, landmarks: landmarks) })
        else { return true }
        let score = try score(crop)
        if FaceAttributeReader.traceMeasures {
            let line = String(format: "{\"box\": [%.1f, %.1f, %.1f, %.1f], \"score\": %.3f, \"hog\": %.3f}\n",
                              face.box.x, face.box.y, face.box.w, face.box.h, face.score, score)
            FileHandle.standardError.write(Data(line.utf8))
        }
        return score >= Self.minScore
    }

    /// The HOG detector's best score for a face near the crop's box (its
    /// centre within a third of the box of the crop's centre); `searchThreshold` when none,
    /// or when the score is under `doubtfulScore` and the 68-point fit's nose lies
    /// further than `maxNoseOffset` from the detector's.
    package func score(_ crop: UprightFaceCrop) throws -> Double {
        guard let (best, box) = try strongest(in: crop.image, skippingLevels: Self.skippedLevels) else {
            return Self.searchThreshold
        }
        let centre = Double(UprightFaceCrop.side) / 2
        let offset = hypot(box.x + box.width / 2 - centre, box.y + box.height / 2 - centre)
        guard offset <= UprightFaceCrop.boxSide / 3 else { return Self.searchThreshold }
        if best < Self.doubtfulScore, let offset = try noseOffset(crop), offset > Self.maxNoseOffset {
            return Self.searchThreshold
        }
        return best
    }

    /// The HOG detector's strongest detection in `gray` down to
    /// `searchThreshold` (its score and box, in `gray`'s pixels), the scan
    /// starting `skippingLevels` levels down dlib's pyramid; nil when none.
    func strongest(in gray: ImageBuffer, skippingLevels levels: Int) throws -> (score: Double, box: slcv_rect_d)? {
        var best = Self.searchThreshold, box = slcv_rect_d(), found: Int32 = 0
        try OpenCVError.check {
            slcv_hog_faces_best(handle, gray.cView, Int32(levels), Self.searchThreshold, &best, &box, &found, $0)
        }
        return found > 0 ? (best, box) : nil
    }

    /// How far dlib's 68-point fit puts the nose tip from the detector's nose,
    /// per interocular distance of the fit; nil without the model or the detector's nose.
    func noseOffset(_ crop: UprightFaceCrop) throws -> Double? {
        guard let shapeModel, let nose = crop.landmarks.nose, let toCrop = crop.toFrame.inverted else { return nil }
        let shape = try shapeModel.fit(crop)
        let offset = toCrop.apply(nose).distance(to: shape[30]) / max(1, shape.interocular)
        if FaceAttributeReader.traceMeasures {
            FileHandle.standardError.write(Data(String(format: "{\"noseOffset\": %.3f}\n", offset).utf8))
        }
        return offset
    }
}
