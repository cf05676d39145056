import Foundation
import Testing
@testable import SightlineSupport
@testable import SightlinePipeline
import SightlineTesting

/// A callback read on every frame must not grow with its reads: a bare
/// closure in a Mutex did (two reabstraction thunks a read), and releasing
/// the chain at shutdown overflowed the stack. Each test reads many times,
/// then releases the owner on a thread with a 128 KiB stack: a chain of even
/// a few thousand closures crashes there, so these tests crash rather than
/// pass if it comes back.
@Suite struct LockedCallbackTests {
    /// Runs `body` on a new thread with a small stack and waits for it.
    private func onSmallStack(_ body: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            body()
            done.signal()
        }
        thread.stackSize = 128 * 1024
        thread.start()
        done.wait()
    }

    @Test func readsLeaveTheCallbackAsItWas() {
        let calls = Counter()
        let reads = 300_000
        onSmallStack {
            var callback: LockedCallback<Double, Bool>? = LockedCallback { seconds in
                calls.add()
                return seconds > 1
            }
            var answers = 0
            for _ in 0..<reads where callback!(2) == true { answers += 1 }
            callback = nil
            #expect(answers == reads)
        }
        #expect(calls.value == reads)
        let none = LockedCallback<Void, Int>()
        #expect(none() == nil && !none.isSet)
        none.setAction { 7 }
        #expect(none() == 7 && none.isSet)
    }

    @Test func theStreamSinkCanBeReleasedAfterManyFrames() {
        let wakes = Counter()
        let frames = 20_000
        onSmallStack {
            var sink: StreamSink? = StreamSink(stats: PipelineStats())
            sink!.connect(wake: { wakes.add() })
            let frame = ProcessedFrame(seq: 1, capturedAt: 0, capturedNanos: 0, width: 4, height: 4, jpeg: Data([1]),
                                       detections: [])
            for _ in 0..<frames { sink!.deliver(frame) }
            sink = nil
        }
        #expect(wakes.value == frames)
    }
}
