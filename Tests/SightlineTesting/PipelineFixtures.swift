import Foundation
import Logging
import SightlineSupport
import SightlineVision
import SightlinePipeline

/// A source whose frames are flat grey and which fails while `broken` is set.
package final class FlakySource: FrameSource, @unchecked Sendable {
    package let lock = NSLock()
    package var broken = false
    package var opens = 0
    package init() {}
    package var name: String { "flaky" }
    package var pacing: SourcePacing { .fixedRate }
    package func open() throws -> SourceFormat {
        try lock.withLock {
            opens += 1
            if broken { throw SourceError.cannotOpen("unplugged") }
        }
        return SourceFormat(width: 64, height: 48, fps: 100, pixelFormat: "test")
    }
    package func nextImage() throws -> CapturedImage {
        if lock.withLock({ broken }) { throw SourceError.vanished("ENODEV") }
        return CapturedImage(image: ImageBuffer(width: 64, height: 48))
    }
    package func close() {}
}

/// A stage that takes `seconds` of the clock's time on each frame (it moves
/// a `ManualClock` on by that much), to make the pipeline slower than the frame
/// budget; after `frames` frames it takes no more time and signals `done`, so
/// the capture loop stops at its next frame's time.
package final class CostlyStage: PipelineStage {
    package let stage: StageName? = .faces
    package let clock: ManualClock
    package let seconds: Double
    package let frames: Int
    package let done = DispatchSemaphore(value: 0)
    private var processed = 0   // pipeline thread
    package init(clock: ManualClock, seconds: Double, frames: Int) {
        self.clock = clock
        self.seconds = seconds
        self.frames = frames
    }
    package func process(_ context: inout FrameContext) throws {
        guard processed < frames else { return }
        processed += 1
        clock.advance(by: seconds)
        if processed == frames { done.signal() }
    }
}

package func quietLogger() -> Logger {
    var logger = Logger(label: "test")
    logger.logLevel = .critical
    return logger
}

package func frame(_ seq: UInt64) -> Frame {
    Frame(seq: seq, capturedAt: 0, capturedNanos: MonotonicClock.nanos(), image: ImageBuffer(width: 8, height: 8))
}
