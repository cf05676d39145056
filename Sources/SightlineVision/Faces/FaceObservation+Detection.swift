import Foundation
import SightlineSupport

extension FaceObservation {
    /// Landmark names on the wire (DESIGN.md), from the subject's point of view.
    public enum LandmarkName {
        public static let rightEye = "rightEye", leftEye = "leftEye", nose = "nose"
        public static let mouthRight = "mouthRight", mouthLeft = "mouthLeft"
    }

    /// The /ws and `detect` detection object for this face in a frame of the
    /// given size: box and landmarks normalized, unknown fields omitted.
    /// Tracking adds `id` and recognition `name`; detect mode has neither.
    public func detection(frameWidth: Int, frameHeight: Int) -> Detection {
        let fw = Double(frameWidth), fh = Double(frameHeight)
        let normalized = NormalizedBox(pixelX: box.x, pixelY: box.y, width: box.w, height: box.h,
                                       frameWidth: frameWidth, frameHeight: frameHeight)
        func point(_ p: PixelPoint) -> [Double] { [(p.x / fw).rounded(toPlaces: 4), (p.y / fh).rounded(toPlaces: 4)] }
        var named: [String: [Double]]?
        if let l = landmarks {
            var values = [LandmarkName.rightEye: point(l.rightEye), LandmarkName.leftEye: point(l.leftEye)]
            values[LandmarkName.nose] = l.nose.map(point)
            values[LandmarkName.mouthRight] = l.mouthRight.map(point)
            values[LandmarkName.mouthLeft] = l.mouthLeft.map(point)
            named = values
        }
        return Detection(kind: .face, score: score.rounded(toPlaces: 4), box: normalized.rounded,
                         roll: roll?.rounded(toPlaces: 1), yaw: yaw?.rounded(toPlaces: 1), landmarks: named,
                         smile: smile?.rounded(toPlaces: 2), eyesClosed: eyesClosed)
    }
}
