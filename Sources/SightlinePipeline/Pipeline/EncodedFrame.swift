import Foundation
import SightlineSupport
import Synchronization

/// A processed frame ready to send: its JSON message and its JPEG.
/// Immutable, shared by every client that sends it.
public struct EncodedFrame: Sendable {
    public let seq: UInt64
    public let capturedAt: Double
    public let capturedNanos: UInt64
    public let width: Int
    public let height: Int
    public let json: Data
    public let jpeg: Data
    /// Position among published frames (1, 2, ...), set by the slot, so a
    /// client can count the frames it skipped.
    public internal(set) var index: UInt64 = 0

    public init(seq: UInt64, capturedAt: Double, capturedNanos: UInt64, width: Int, height: Int,
                json: Data, jpeg: Data) {
        self.seq = seq
        self.capturedAt = capturedAt
        self.capturedNanos = capturedNanos
        self.width = width
        self.height = height
        self.json = json
        self.jpeg = jpeg
    }
}

/// The newest encoded frame, written by the stream sink (pipeline thread)
/// and read by the server's service thread. Only the newest is kept.
public final class LatestFrameSlot: Sendable {
    private let frame = Locked<EncodedFrame?>(nil)

    public init() {}

    public var latest: EncodedFrame? { frame.withLock { $0 } }

    public func publish(_ newFrame: EncodedFrame) {
        frame.withLock { frame in
            var numbered = newFrame
            numbered.index = (frame?.index ?? 0) + 1
            frame = numbered
        }
    }
}
