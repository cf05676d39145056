/// How much an eye's pixels vary inside its lids, from the 68 points of an
/// upright crop: the standard deviation of the gray inside the six-point
/// lid outline over the mean gray around it (the box 1.5 eye widths across
/// and 1.2 high about the eye, outside the outline). An open eye shows a
/// bright sclera beside a dark iris between the lids; a shut lid is skin,
/// even. The fit of a blink on a small face can hold the lids a little
/// apart (aspect ratio 0.16-0.17, as narrowed open eyes read), but what it
/// holds between them is flat: on the labelled faces those blinks read
/// 0.05-0.07, every open eye's better one 0.12 or more.
package enum EyeTexture {
    /// The better (larger) of both eyes' measures in an upright crop.
    package static func betterEye(in crop: UprightFaceCrop, shape: FaceShape) -> Double {
        max(contrast(in: crop.image, shape: shape, eye: 36), contrast(in: crop.image, shape: shape, eye: 42))
    }

    /// The measure for the eye whose six points start at `first` (36 or 42);
    /// 0 when the outline holds no pixel.
    static func contrast(in image: ImageBuffer, shape: FaceShape, eye first: Int) -> Double {
        precondition(image.channels == 1, "eye texture is read on gray")
        let outline = (first...(first + 5)).map { shape[$0] }
        let width = max(1, outline[0].distance(to: outline[3]))
        let centre = FaceShape.mean(first...(first + 5), shape.points)
        let cx = centre.x, cy = centre.y
        let x0 = max(0, Int(cx - width * 0.75)), x1 = min(image.width - 1, Int(cx + width * 0.75))
        let y0 = max(0, Int(cy - width * 0.6)), y1 = min(image.height - 1, Int(cy + width * 0.6))
        guard x0 <= x1, y0 <= y1 else { return 0 }
        var inside = (count: 0.0, sum: 0.0, squares: 0.0)
        var around = (count: 0.0, sum: 0.0)
        for y in y0...y1 {
            let row = image.bytes + y * image.stride
            for x in x0...x1 {
                let value = Double(row[x])
                if contains(outline, x: Double(x) + 0.5, y: Double(y) + 0.5) {
                    inside.count += 1; inside.sum += value; inside.squares += value * value
                } else {
                    around.count += 1; around.sum += value
                }
            }
        }
        guard inside.count > 0, around.count > 0, around.sum > 0 else { return 0 }
        let mean = inside.sum / inside.count
        let variance = max(0, inside.squares / inside.count - mean * mean)
        return variance.squareRoot() / (around.sum / around.count)
    }

    /// Even-odd rule: whether (x, y) lies inside the polygon.
    static func contains(_ polygon: [PixelPoint], x: Double, y: Double) -> Bool {
        var inside = false
        var j = polygon.count - 1
        for i in polygon.indices {
            let a = polygon[i], b = polygon[j]
            if (a.y > y) != (b.y > y), x < (b.x - a.x) * (y - a.y) / (b.y - a.y) + a.x { inside.toggle() }
            j = i
        }
        return inside
    }
}
