import Foundation
import Testing
import SightlineVision

/// Real faces from ../shared/testdata/faces (faces.json's boxes and eyes),
/// and augmented aligned crops made from them.
package struct FacePhoto {
    package let file: String
    /// The photo in gray.
    package let image: ImageBuffer
    package let box: PixelRect<Double>
    package let landmarks: FaceLandmarks

    /// Two distinct people (different photos) and a third for corrections;
    /// the largest faces of the set, 76 to 90 pixels.
    package static let ada = (file: "2008_001009.jpg", face: 1)
    package static let bob = (file: "2008_001322.jpg", face: 2)
    package static let cy = (file: "2008_001322.jpg", face: 0)

    package static var facesDirectory: String { (TestPaths.testData as NSString).appendingPathComponent("faces") }

    package static func load(_ which: (file: String, face: Int)) throws -> FacePhoto {
        let jsonPath = (facesDirectory as NSString).appendingPathComponent("faces.json")
        let data = try #require(FileManager.default.contents(atPath: jsonPath),
                                "face test data missing at \(jsonPath); set SIGHTLINE_TEST_DATA to the shared testdata directory")
        let truth = try JSONDecoder().decode(FacesJSON.self, from: data)
        let entry = try #require(truth.images.first { $0.file == which.file }?.faces.dropFirst(which.face).first,
                                 "\(which.file) face \(which.face) is not in faces.json")
        let image = try ImageIO.read(path: (facesDirectory as NSString).appendingPathComponent(which.file), channels: 1)
        let point = { (p: [Double]) in PixelPoint(x: p[0], y: p[1]) }
        // The image-left eye is the subject's right eye.
        let landmarks = FaceLandmarks(rightEye: point(entry.landmarks["eyeImageLeft"] ?? []),
                                      leftEye: point(entry.landmarks["eyeImageRight"] ?? []))
        let box = PixelRect(x: entry.box[0], y: entry.box[1], w: entry.box[2], h: entry.box[3])
        return FacePhoto(file: which.file, image: image, box: box, landmarks: landmarks)
    }

    private struct FacesJSON: Decodable {
        struct Image: Decodable {
            var file: String
            var faces: [Face]
            // grace_hopper and messi have expectations in words instead of faces.
            init(from decoder: Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                file = try container.decode(String.self, forKey: .file)
                faces = (try? container.decode([Face].self, forKey: .faces)) ?? []
            }
            enum CodingKeys: String, CodingKey { case file, faces }
        }
        struct Face: Decodable { var box: [Double]; var landmarks: [String: [Double]] }
        var images: [Image]
    }
}

/// A picture of the face as a camera might give it: a region around it,
/// rotated, rescaled, lit differently, noisy, maybe blurred, with eye
/// positions off by a detector's error. Deterministic for a seed.
package struct AugmentedView {
    /// The region (gray), usable as a frame.
    package let frame: ImageBuffer
    /// Where the detector says the face and eyes are, in `frame` pixels.
    package let observation: FaceObservation

    package static let regionScale = 2.4  // region side in face sizes

    package init(_ photo: FacePhoto, seed: UInt64) throws {
        var random = SeededRandom(seed: seed &* 7919 &+ 17)
        let angle = random.uniform(-10...10)
        let scale = random.uniform(0.85...1.15)
        let eyeError = 2.0
        let brightness = random.uniform(-40...40)
        let contrast = random.uniform(0.75...1.25)
        let noise = random.uniform(0...6)
        let blurred = random.chance(0.3)

        let region = try Self.region(around: photo)
        var image = try ImageOps.rotated(region.image, clockwiseDegrees: angle)
        image = try ImageOps.resized(image, width: Int(Double(image.width) * scale), height: Int(Double(image.height) * scale),
                                     interpolation: .linear)
        Self.adjust(image, contrast: contrast, brightness: brightness)
        if noise > 0.5 { try ImageOps.addNoise(image, seed: seed, sigma: noise) }
        if blurred { try ImageOps.blur(image, kernel: 3) }

        let centre = PixelPoint(x: Double(region.image.width - 1) / 2, y: Double(region.image.height - 1) / 2)
        func place(_ p: PixelPoint) -> PixelPoint {
            let local = PixelPoint(x: p.x - region.origin.x, y: p.y - region.origin.y)
            let r = Self.rotate(local, about: centre, clockwiseDegrees: angle)
            return PixelPoint(x: r.x * scale + random.uniform(-eyeError...eyeError),
                              y: r.y * scale + random.uniform(-eyeError...eyeError))
        }
        let landmarks = FaceLandmarks(rightEye: place(photo.landmarks.rightEye), leftEye: place(photo.landmarks.leftEye))
        let c = Self.rotate(PixelPoint(x: photo.box.x + photo.box.w / 2 - region.origin.x,
                                       y: photo.box.y + photo.box.h / 2 - region.origin.y),
                            about: centre, clockwiseDegrees: angle)
        let side = photo.box.w * scale
        frame = image
        observation = FaceObservation(box: PixelRect(x: c.x * scale - side / 2, y: c.y * scale - side / 2, w: side, h: side),
                                      score: 0.9, landmarks: landmarks, roll: angle, yaw: 0)
    }

    /// The aligned crop the recognizer sees.
    package func alignedCrop() throws -> ImageBuffer {
        try FaceAligner().align(frame, landmarks: try #require(observation.landmarks))
    }

    private static func region(around photo: FacePhoto) throws -> (image: ImageBuffer, origin: PixelPoint) {
        let side = photo.box.w * regionScale
        let x = max(0, Int(photo.box.x + photo.box.w / 2 - side / 2))
        let y = max(0, Int(photo.box.y + photo.box.h / 2 - side / 2))
        let w = min(photo.image.width - x, Int(side)), h = min(photo.image.height - y, Int(side))
        let view = photo.image.cView(x: x, y: y, width: w, height: h)
        return (ImageBuffer(copying: view), PixelPoint(x: Double(x), y: Double(y)))
    }

    package static func rotate(_ p: PixelPoint, about c: PixelPoint, clockwiseDegrees: Double) -> PixelPoint {
        let a = clockwiseDegrees * .pi / 180
        let dx = p.x - c.x, dy = p.y - c.y
        return PixelPoint(x: c.x + dx * cos(a) - dy * sin(a), y: c.y + dx * sin(a) + dy * cos(a))
    }

    private static func adjust(_ image: ImageBuffer, contrast: Double, brightness: Double) {
        for row in 0..<image.height {
            let line = image.bytes + row * image.stride
            for i in 0..<(image.width * image.channels) {
                let v = (Double(line[i]) - 128) * contrast + 128 + brightness
                line[i] = UInt8(max(0, min(255, v.rounded())))
            }
        }
    }
}

extension FacePhoto {
    package func crops(seeds: Range<UInt64>) throws -> [ImageBuffer] {
        try seeds.map { try AugmentedView(self, seed: $0).alignedCrop() }
    }
}
