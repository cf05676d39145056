import SightlineSupport
/// The mmap buffers of one streaming session: allocated and mapped at open,
/// unmapped and freed at close.
///
/// Ownership: belongs to one V4L2Source and runs on its capture thread.
struct V4L2BufferPool {
    private(set) var mapped: [UnsafeMutableRawBufferPointer] = []
    private var allocated = false

    /// Fewer than this and the driver would stall between dequeue and requeue.
    static let minimumCount = 2

    /// Asks the driver for `count` buffers and maps each one.
    mutating func allocate(count: Int, on device: any V4L2Device) throws {
        let granted = try device.requestBuffers(count: count)
        allocated = true
        guard granted >= Self.minimumCount else {
            throw SourceError.cannotOpen("the driver granted \(granted) buffers, fewer than \(Self.minimumCount)")
        }
        for index in 0..<granted {
            mapped.append(try device.mapBuffer(try device.queryBuffer(index: index)))
        }
    }

    /// Hands every buffer to the driver to fill.
    func queueAll(on device: any V4L2Device) throws {
        for index in mapped.indices { try device.queueBuffer(index: index) }
    }

    /// The filled bytes of a dequeued buffer; nil when the driver named a buffer we do not have.
    func bytes(of buffer: V4L2DequeuedBuffer) -> UnsafeRawBufferPointer? {
        guard mapped.indices.contains(buffer.index) else { return nil }
        let memory = mapped[buffer.index]
        return UnsafeRawBufferPointer(rebasing: memory[0..<min(max(buffer.bytesUsed, 0), memory.count)])
    }

    /// Unmaps and frees every buffer; failures (a vanished device) are ignored.
    mutating func release(on device: any V4L2Device) {
        for memory in mapped { device.unmapBuffer(memory) }
        mapped.removeAll()
        if allocated { _ = try? device.requestBuffers(count: 0) }
        allocated = false
    }
}
