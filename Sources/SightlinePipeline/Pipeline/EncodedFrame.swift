import Foundation
import SightlineSupport
import Synchronization

/// A processed frame ready to send: its JPEGs (`FrameJPEG`: made on the
/// pipeline thread for the sizes viewers took when it was published, any
/// other on demand off the service thread) and, for each size made then, the
/// `/ws` JSON that goes before that JPEG (`jpegBytes` is that JPEG's length).
/// Immutable, shared by every client that sends it.
public struct EncodedFrame: Sendable {
    public let seq: UInt64
    public let capturedAt: Double
    public let capturedNanos: UInt64
    /// The full picture's size (every size's JSON says it; boxes are normalized).
    public let width: Int
    public let height: Int
    public let jpeg: FrameJPEG
    /// Each size's JSON and JPEG, for the sizes made when the frame was published.
    private let sendable: [JPEGSize: (json: Data, jpeg: Data)]
    /// Position among published frames (1, 2, ...), set by the slot, so a
    /// client can count the frames it skipped.
    public internal(set) var index: UInt64 = 0

    /// `sendable`: the JSON and JPEG of each size made when the frame was published.
    public init(seq: UInt64, capturedAt: Double, capturedNanos: UInt64, width: Int, height: Int,
                jpeg: FrameJPEG, sendable: [JPEGSize: (json: Data, jpeg: Data)]) {
        self.seq = seq
        self.capturedAt = capturedAt
        self.capturedNanos = capturedNanos
        self.width = width
        self.height = height
        self.jpeg = jpeg
        self.sendable = sendable
    }

    /// One JSON and JPEG for every size (tests).
    public init(seq: UInt64, capturedAt: Double, capturedNanos: UInt64, width: Int, height: Int,
                json: Data, jpeg: Data) {
        self.init(seq: seq, capturedAt: capturedAt, capturedNanos: capturedNanos, width: width, height: height,
                  jpeg: FrameJPEG(encoded: jpeg),
                  sendable: Dictionary(uniqueKeysWithValues: JPEGSize.allCases.map { ($0, (json, jpeg)) }))
    }

    /// What a `/ws` or `/stream.mjpg` viewer of `size` is sent of this frame;
    /// nil when that size was not made as it was published (the viewer came
    /// after: it gets the next frame, which is made for it).
    public func send(_ size: JPEGSize) -> (json: Data, jpeg: Data)? { sendable[size] }
}

/// The JPEG viewers of one camera now, by the size they take (`/ws` JPEG
/// viewers and `/stream.mjpg` streams): the pipeline makes a frame's JPEG at
/// the sizes someone takes, and no JPEG while nobody does.
///
/// Threads: changed on the service thread (viewers come and go), read on the
/// pipeline thread each frame; the counts are in a `Mutex`.
public final class JPEGViewers: Sendable {
    private let counts = Locked<[JPEGSize: Int]>([:])

    public init() {}

    /// A viewer of `size` came (+1) or went (-1).
    public func change(_ size: JPEGSize, by change: Int) {
        counts.withLock { $0[size, default: 0] += change }
    }

    /// The sizes someone takes now.
    public var wanted: Set<JPEGSize> {
        counts.withLock { counts in Set(counts.filter { $0.value > 0 }.keys) }
    }

    public func count(_ size: JPEGSize) -> Int { counts.withLock { $0[size] ?? 0 } }
}

/// The newest encoded frame, written by the stream sink (pipeline thread)
/// and read by the server's service thread. Only the newest is kept. Its
/// `viewers` tell the sink which JPEGs to have made.
public final class LatestFrameSlot: Sendable {
    private let frame = Locked<EncodedFrame?>(nil)
    public let viewers = JPEGViewers()

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
