import Foundation

/// The 68 points dlib's shape predictor places on a face (the iBUG 300-W
/// layout, numbered from 0 here: jaw 0-16, brows 17-26, nose 27-35, eyes
/// 36-41 and 42-47, outer lips 48-59, inner lips 60-67; "right" and "left"
/// are the image's), in the pixels of an upright crop, and what is measured
/// from them. Every measure is a ratio, so the crop's scale does not matter.
package struct FaceShape: Sendable {
    let points: [PixelPoint]

    init(points: [PixelPoint]) {
        precondition(points.count == FaceShapeModel.parts)
        self.points = points
    }

    subscript(_ index: Int) -> PixelPoint { points[index] }

    static func mean(_ range: ClosedRange<Int>, _ points: [PixelPoint]) -> PixelPoint {
        let chosen = range.map { points[$0] }
        return PixelPoint(x: chosen.map(\.x).reduce(0, +) / Double(chosen.count),
                          y: chosen.map(\.y).reduce(0, +) / Double(chosen.count))
    }

    /// Outer eye corners' distance (36 to 45): the scale of the other measures.
    var interocular: Double { self[36].distance(to: self[45]) }

    /// Eye aspect ratio (Soukupová and Čech 2016) of the eye whose six points
    /// start at `first` (36: the image's left eye, 42: its right):
    /// (|p2-p6| + |p3-p5|) / (2 |p1-p4|). About 0.25-0.35 open, under 0.2 closed.
    func eyeAspectRatio(from first: Int) -> Double {
        let p = (first...(first + 5)).map { self[$0] }
        let width = p[0].distance(to: p[3])
        guard width > 0 else { return 0 }
        return (p[1].distance(to: p[5]) + p[2].distance(to: p[4])) / (2 * width)
    }

    /// Both eyes' mean aspect ratio.
    var eyeAspectRatio: Double { (eyeAspectRatio(from: 36) + eyeAspectRatio(from: 42)) / 2 }

    /// Mouth corners' distance (48 to 54) per interocular distance.
    var mouthWidth: Double { self[48].distance(to: self[54]) / max(1, interocular) }

    /// How far the mouth corners sit above the lips' centre line (the mean
    /// height of the centre points of both lips, 51, 57, 62, 66), per
    /// interocular distance: positive when the corners are lifted, as in a smile.
    var cornerLift: Double {
        let centre = (self[51].y + self[57].y + self[62].y + self[66].y) / 4
        let corners = (self[48].y + self[54].y) / 2
        return (centre - corners) / max(1, interocular)
    }

    /// Lips apart (inner lips 62 to 66) per interocular distance.
    var mouthOpen: Double { self[62].distance(to: self[66]) / max(1, interocular) }

    /// How far the mouth corners sit above the upper lip's centre (51, 62),
    /// per interocular distance: about 0 or more in a smile, where the
    /// corners rise to the upper lip, and well below 0 when the mouth
    /// drops open without a smile (a shout, surprise), whose corners stay
    /// halfway down the opening. Unlike `cornerLift` it does not grow as the
    /// lower lip drops.
    var upperLipLift: Double {
        let upper = (self[51].y + self[62].y) / 2
        let corners = (self[48].y + self[54].y) / 2
        return (upper - corners) / max(1, interocular)
    }

    /// Yaw from the nose tip's place between the jaw's sides at the nose's
    /// height (points 2 and 14): 0 centred, ±90 at a side. Positive when the
    /// face turns towards the image's right (DESIGN.md), where the nose
    /// moves right. A rough reading, used only to judge whether a face is
    /// frontal enough for its eyes and mouth to be read.
    var yaw: Double {
        let left = self[2].x, right = self[14].x
        guard right - left > 1 else { return 0 }
        let position = (self[30].x - left) / (right - left)
        return asin(max(-1, min(1, 2 * position - 1))) * 180 / .pi
    }

    /// How far dlib's fit lies from the five points the detector placed
    /// (eyes, nose tip, mouth corners), per interocular distance: the mean
    /// of the five offsets. A check that the fit follows the face (the
    /// tests hold it under 0.2 on the shared photos; it measured 0.03-0.14).
    /// Not used to refuse animal faces: `PersonFaceCheck` does that.
    func disagreement(with landmarks: FaceLandmarks, toCrop: AffineTransform) -> Double? {
        guard let nose = landmarks.nose, let mouthRight = landmarks.mouthRight, let mouthLeft = landmarks.mouthLeft
        else { return nil }
        // The subject's right eye is the image's left one (36-41).
        let pairs: [(PixelPoint, PixelPoint)] = [
            (toCrop.apply(landmarks.rightEye), Self.mean(36...41, points)),
            (toCrop.apply(landmarks.leftEye), Self.mean(42...47, points)),
            (toCrop.apply(nose), self[30]),
            (toCrop.apply(mouthRight), self[48]),
            (toCrop.apply(mouthLeft), self[54]),
        ]
        return pairs.map { $0.0.distance(to: $0.1) }.reduce(0, +) / Double(pairs.count) / max(1, interocular)
    }
}
