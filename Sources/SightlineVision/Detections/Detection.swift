import Foundation
import SightlineSupport

/// A rectangle normalized to [0, 1] of the frame, origin top-left, y down.
public struct NormalizedBox: Codable, Sendable, Equatable {
    public var x: Double, y: Double, w: Double, h: Double

    public init(x: Double, y: Double, w: Double, h: Double) {
        self.x = x; self.y = y; self.w = w; self.h = h
    }

    /// From a pixel rectangle in a frame of the given size.
    public init(pixelX: Double, pixelY: Double, width: Double, height: Double, frameWidth: Int, frameHeight: Int) {
        let fw = Double(frameWidth), fh = Double(frameHeight)
        self.init(x: pixelX / fw, y: pixelY / fh, w: width / fw, h: height / fh)
    }

    public func intersectionOverUnion(_ other: NormalizedBox) -> Double {
        let ix = max(0, min(x + w, other.x + other.w) - max(x, other.x))
        let iy = max(0, min(y + h, other.y + other.h) - max(y, other.y))
        let intersection = ix * iy
        let union = w * h + other.w * other.h - intersection
        return union > 0 ? intersection / union : 0
    }

    /// Rounded for the wire (4 decimals is a tenth of a pixel at 1280 px).
    package var rounded: NormalizedBox {
        NormalizedBox(x: x.rounded(toPlaces: 4), y: y.rounded(toPlaces: 4),
                      w: w.rounded(toPlaces: 4), h: h.rounded(toPlaces: 4))
    }
}

/// One thing found in a frame, as DESIGN.md's /ws contract spells it.
/// Optional fields are omitted when unknown, never made up.
public struct Detection: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable { case face, template }

    public var kind: Kind
    public var id: Int?
    public var label: String?
    public var score: Double
    public var box: NormalizedBox
    public var scale: Double?
    public var angle: Double?
    public var roll: Double?
    public var yaw: Double?
    public var landmarks: [String: [Double]]?
    public var name: String?
    public var nameConfidence: Double?
    public var smile: Double?
    public var eyesClosed: Bool?

    public init(kind: Kind, id: Int? = nil, label: String? = nil, score: Double, box: NormalizedBox,
                scale: Double? = nil, angle: Double? = nil, roll: Double? = nil, yaw: Double? = nil,
                landmarks: [String: [Double]]? = nil, name: String? = nil, nameConfidence: Double? = nil,
                smile: Double? = nil, eyesClosed: Bool? = nil) {
        self.kind = kind; self.id = id; self.label = label; self.score = score; self.box = box
        self.scale = scale; self.angle = angle; self.roll = roll; self.yaw = yaw
        self.landmarks = landmarks; self.name = name; self.nameConfidence = nameConfidence
        self.smile = smile; self.eyesClosed = eyesClosed
    }

    /// A template match.
    public static func template(label: String, score: Double, scale: Double, angle: Double,
                                box: NormalizedBox) -> Detection {
        Detection(kind: .template, label: label, score: score.rounded(toPlaces: 4), box: box.rounded,
                  scale: scale.rounded(toPlaces: 4), angle: angle.rounded(toPlaces: 2))
    }
}
