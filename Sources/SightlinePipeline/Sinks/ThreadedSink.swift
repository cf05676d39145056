import Foundation
import Synchronization
import SightlineVision
import SightlineSupport

/// What a sink does with each frame, on the sink's own thread.
public protocol FrameConsumer: AnyObject {
    /// The sink's thread: one frame, the newest there was when it was free.
    func consume(_ frame: ProcessedFrame)
    /// The sink's thread: the sink is stopping (flush, close connections).
    func finish()
}

extension FrameConsumer {
    public func finish() {}
}

/// A sink with its own thread: the pipeline puts each frame in a mailbox
/// (one slot unless the sink asks for more) and goes on; the thread takes
/// them in order and hands them to the consumer. A consumer slower than the
/// frame rate sees fewer frames (the oldest waiting are dropped and counted
/// as skipped), and never slows the pipeline or another sink. More slots
/// let a consumer that must see every frame (the H.264 encoder: a skipped
/// frame is missing from clips and viewers' video) ride out a stall of that
/// many frames, at that many frames of memory.
public final class ThreadedSink: FrameSink {
    public let name: String
    private let mailbox: SinkMailbox<ProcessedFrame>
    private let consumer: ThreadOwned<any FrameConsumer>
    private let started = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    /// The consumer is handed over whole: from here on only the sink's thread touches it.
    public init(name: String, consumer: sending any FrameConsumer, capacity: Int = 1) {
        self.name = name
        mailbox = SinkMailbox(capacity: capacity)
        self.consumer = ThreadOwned(consumer)
    }

    public func deliver(_ frame: ProcessedFrame) {
        mailbox.put(frame)
    }

    public var counts: SinkCounts { mailbox.counts }

    public func start() throws {
        let mailbox = self.mailbox
        let consumer = self.consumer
        let finished = self.finished
        let threadName = "sightline.sink.\(name)"
        let thread = Thread {
            Thread.setOSName(threadName)
            while true {
                if let frame = mailbox.take(timeout: 0.5) {
                    consumer.value.consume(frame)
                    mailbox.consumed()
                } else if mailbox.isClosed {
                    break
                }
            }
            consumer.value.finish()
            finished.signal()
        }
        thread.name = threadName
        started.store(true, ordering: .sequentiallyConsistent)
        thread.start()
    }

    public func stop() {
        mailbox.close()
        if started.load(ordering: .sequentiallyConsistent) { finished.wait() }
    }
}
