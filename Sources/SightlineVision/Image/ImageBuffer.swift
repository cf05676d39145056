import CSightlineOpenCV
import Foundation
import SightlineSupport

/// Pixels in memory Swift owns: 8-bit, BGR (3 channels) or gray (1), rows
/// `stride` bytes apart.
///
/// Ownership: an ImageBuffer is written by exactly one thread (the one that
/// made it) and only read once it has been handed on through a mailbox or
/// a latest-frame slot. That handoff is the publication point, so the
/// class is `@unchecked Sendable` by that discipline rather than by a lock.
public final class ImageBuffer: @unchecked Sendable {
    public let width: Int
    public let height: Int
    public let channels: Int
    public let stride: Int
    public let bytes: UnsafeMutablePointer<UInt8>

    /// A black picture; `zeroed` false leaves the bytes as the allocator gave
    /// them, for a buffer whose every pixel is about to be written (a
    /// conversion, a resize, a copy): at 1080p, clearing costs as much as
    /// copying the picture.
    public init(width: Int, height: Int, channels: Int = 3, zeroed: Bool = true) {
        precondition(width > 0 && height > 0 && (channels == 1 || channels == 3 || channels == 4))
        self.width = width
        self.height = height
        self.channels = channels
        self.stride = width * channels
        let count = stride * height
        bytes = .allocate(capacity: count)
        if zeroed { bytes.initialize(repeating: 0, count: count) }
    }

    deinit { bytes.deallocate() }

    public var byteCount: Int { stride * height }

    /// The C view the OpenCV shim wraps without copying.
    public var cView: slcv_image {
        slcv_image(data: bytes, width: Int32(width), height: Int32(height),
                   stride: Int32(stride), channels: Int32(channels))
    }

    /// A view of the rectangle (clipped by the caller to lie inside the image).
    public func cView(x: Int, y: Int, width w: Int, height h: Int) -> slcv_image {
        precondition(x >= 0 && y >= 0 && w > 0 && h > 0 && x + w <= width && y + h <= height)
        return slcv_image(data: bytes + y * stride + x * channels, width: Int32(w), height: Int32(h),
                          stride: Int32(stride), channels: Int32(channels))
    }

    /// Copies a C view (for example a decoded or captured matrix) into a new buffer.
    public convenience init(copying view: slcv_image) {
        self.init(width: Int(view.width), height: Int(view.height), channels: Int(view.channels), zeroed: false)
        let rowBytes = width * channels
        for row in 0..<height {
            (bytes + row * stride).update(from: view.data + row * Int(view.stride), count: rowBytes)
        }
    }

    /// A copy of the rectangle (which must lie inside the image).
    public func cropped(x: Int, y: Int, width w: Int, height h: Int) -> ImageBuffer {
        precondition(x >= 0 && y >= 0 && w > 0 && h > 0 && x + w <= width && y + h <= height)
        let other = ImageBuffer(width: w, height: h, channels: channels)
        for row in 0..<h {
            (other.bytes + row * other.stride).update(from: bytes + (y + row) * stride + x * channels, count: w * channels)
        }
        return other
    }

    public func copy() -> ImageBuffer {
        let other = ImageBuffer(width: width, height: height, channels: channels)
        other.bytes.update(from: bytes, count: byteCount)
        return other
    }

    /// Pixel (b, g, r) at x, y; for gray images all three are the same.
    public func pixel(x: Int, y: Int) -> (UInt8, UInt8, UInt8) {
        let p = bytes + y * stride + x * channels
        return channels == 1 ? (p[0], p[0], p[0]) : (p[0], p[1], p[2])
    }
}
