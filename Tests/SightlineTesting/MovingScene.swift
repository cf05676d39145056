import Foundation
import SightlineVision

/// A 640x480 picture that moves: a diagonal gradient drifting right, a
/// textured square gliding across it and a bright disc bouncing.
package enum MovingScene {
    package static func frame(_ index: Int, width: Int = 640, height: Int = 480) -> ImageBuffer {
        let image = ImageBuffer(width: width, height: height)
        let squareX = 40 + index * 7, squareY = 60 + index * 3
        let discX = 320 + Int(200 * sin(Double(index) / 9)), discY = 240 + Int(120 * cos(Double(index) / 7))
        for y in 0..<height {
            let row = image.bytes + y * image.stride
            for x in 0..<width {
                var b = UInt8((x + y + index * 4) & 0xFF), g = UInt8((x / 2 + 64) & 0xFF), r = UInt8((y / 2 + 32) & 0xFF)
                if (squareX..<(squareX + 120)).contains(x) && (squareY..<(squareY + 120)).contains(y) {
                    let checker = ((x - squareX) / 8 + (y - squareY) / 8) & 1 == 0
                    b = checker ? 230 : 20; g = checker ? 40 : 200; r = 90
                }
                let dx = x - discX, dy = y - discY
                if dx * dx + dy * dy < 40 * 40 { b = 250; g = 250; r = 250 }
                row[x * 3] = b; row[x * 3 + 1] = g; row[x * 3 + 2] = r
            }
        }
        return image
    }
}
