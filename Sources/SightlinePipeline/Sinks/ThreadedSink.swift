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

/// A sink with its own thread: the pipeline puts each frame in a one-slot
/// mailbox and goes on; the thread takes the newest and hands it to the
/// consumer. A consumer slower than the frame rate sees fewer frames (the
/// rest are counted as skipped), never older ones, and never slows the
/// pipeline or another sink.
public final class ThreadedSink: FrameSink {
    public let name: String
    private let mailbox = SinkMailbox<ProcessedFrame>()
    private let consumer: ThreadOwned<any FrameConsumer>
    private let started = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    /// The consumer is handed over whole: from here on only the sink's thread touches it.
    public init(name: String, consumer: sending any FrameConsumer) {
        self.name = name
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
