import Foundation

/// The multipart/x-mixed-replace framing that VLC, Home Assistant, OBS and
/// mjpg-streamer clients read.
public enum MJPEG {
    public static let boundary = "sightlineframe"
    public static var contentType: String { "multipart/x-mixed-replace; boundary=\(boundary)" }

    public static func partHead(length: Int, seq: UInt64, capturedAt: Double) -> String {
        "--\(boundary)\r\nContent-Type: image/jpeg\r\nContent-Length: \(length)\r\n"
            + "X-Sequence: \(seq)\r\nX-Timestamp: \(String(format: "%.6f", capturedAt))\r\n\r\n"
    }
}
