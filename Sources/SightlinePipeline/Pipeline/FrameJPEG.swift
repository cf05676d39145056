import Foundation
import SightlineVision
import SightlineSupport

/// The sizes a frame's JPEG is sent at: `stream`, what JPEG viewers,
/// `/stream.mjpg` and snapshots get unless they ask for the full picture (at
/// most `JPEGSizeRule.maxWidth` wide, proportions kept: `video.jpegMaxWidth`),
/// and `full`, the whole picture (`?full=1`; event snapshots). A frame no
/// wider than the limit, and an MJPEG source's own JPEG, is one JPEG for both.
public enum JPEGSize: String, Sendable, Hashable, CaseIterable {
    case stream, full

    /// What a JPEG route's query asks for: `full=1` (or `true`) the full picture, anything else the stream's size.
    public init(query: [String: String]) {
        switch query["full"]?.lowercased() {
        case "1", "true", "yes": self = .full
        default: self = .stream
        }
    }
}

/// How wide the stream's JPEG may be (`video.jpegMaxWidth`): a wider frame is
/// scaled down to `maxWidth`, its height in proportion; 0 keeps every frame's size.
public struct JPEGSizeRule: Sendable, Equatable {
    /// Why 1280: a 1080p JPEG at quality 80 takes about twice the encode time
    /// and bytes of a 1280x720 one, and a browser tile or a phone shows no more;
    /// `?full=1` or 0 here gives the whole picture.
    public static let defaultMaxWidth = 1280

    /// Widest stream JPEG, pixels (0: no limit).
    public var maxWidth: Int

    public init(maxWidth: Int = JPEGSizeRule.defaultMaxWidth) { self.maxWidth = maxWidth }

    /// The stream JPEG's size for a frame of this size; nil when it is the frame's own.
    public func scaled(width: Int, height: Int) -> (width: Int, height: Int)? {
        guard maxWidth > 0, width > maxWidth else { return nil }
        return (maxWidth, max(1, Int((Double(height) * Double(maxWidth) / Double(width)).rounded())))
    }
}

/// One frame's JPEGs, made when first asked for and then shared by every
/// consumer (JPEG viewers, `/stream.mjpg`, snapshots, the event's snapshot):
/// nobody asks, nothing is encoded; several ask, it is encoded once per size.
/// A frame from an MJPEG source carries that source's JPEG, which every
/// consumer gets as it is, at every size (no decode, no encode; the size rule
/// does not apply to it).
///
/// Threads: `made` never encodes and only takes a short lock (the service
/// thread reads it); `make` encodes on the calling thread (the pipeline
/// thread when a viewer takes JPEG, the HTTP worker for a snapshot, the
/// events thread), holding that size's encode lock so a second caller waits
/// for the first one's JPEG instead of making its own. The pixels are
/// read-only (`ProcessedFrame.image`). A picture whose BGR pixels are made
/// on demand (`FramePicture`) is converted only here, when a JPEG is made:
/// a smaller JPEG straight at its size, the full one at full size.
public final class FrameJPEG: Sendable {
    /// The frame's pixels (nil: the JPEGs were given, not made here).
    private let picture: FramePicture?
    /// A JPEG given whole (an MJPEG source's, or one made before): every size's.
    private let given: Data?
    /// The JPEG is an MJPEG source's own, passed on as it is.
    public let fromSource: Bool
    public let quality: Int
    public let rule: JPEGSizeRule
    /// Told each encode's seconds (the `encode` stage's figures), on the thread that encoded.
    private let encoded: (@Sendable (Double) -> Void)?
    private let made = Locked<[JPEGSize: Data]>([:])
    /// Held while a size is encoded (never by the service thread).
    private let encodingStream = Locked(())
    private let encodingFull = Locked(())

    /// A frame's JPEGs to be made from `image` at `quality` (an MJPEG `source` unit: its JPEG, made by the source).
    public convenience init(image: ImageBuffer, source: SourceUnit? = nil, quality: Int = 80,
                            rule: JPEGSizeRule = JPEGSizeRule(), encoded: (@Sendable (Double) -> Void)? = nil) {
        self.init(picture: FramePicture(image), source: source, quality: quality, rule: rule, encoded: encoded)
    }

    /// A frame's JPEGs to be made from `picture` (its pixels converted when a JPEG is first made).
    public init(picture: FramePicture, source: SourceUnit? = nil, quality: Int = 80, rule: JPEGSizeRule = JPEGSizeRule(),
                encoded: (@Sendable (Double) -> Void)? = nil) {
        self.picture = picture
        given = source?.codec == .mjpeg ? source?.data : nil
        fromSource = given != nil
        self.quality = quality
        self.rule = rule
        self.encoded = encoded
    }

    /// A JPEG made already, every size's (tests; an event's snapshot kept without the pixels).
    public init(encoded jpeg: Data) {
        picture = nil
        given = jpeg
        fromSource = false
        quality = 80
        rule = JPEGSizeRule(maxWidth: 0)
        encoded = nil
    }

    /// The JPEG that serves `size`: the full one when the frame is no wider
    /// than the rule's limit or its JPEG comes from the source.
    public func key(_ size: JPEGSize) -> JPEGSize {
        guard given == nil, size == .stream, let picture else { return .full }
        return rule.scaled(width: picture.width, height: picture.height) == nil ? .full : .stream
    }

    /// The pixel size of `size`'s JPEG.
    public func dimensions(_ size: JPEGSize) -> (width: Int, height: Int)? {
        guard let picture, given == nil else { return nil }
        return key(size) == .full ? (picture.width, picture.height)
            : rule.scaled(width: picture.width, height: picture.height)
    }

    /// `make` on JPEGs that were given, at a size they were not given at (never: every size is the given one).
    public struct NoPixels: Error, CustomStringConvertible {
        public var description: String { "no pixels to encode this frame's JPEG from" }
    }

    /// Whether these JPEGs still hold the frame's pixels (they can be made at another size).
    public var holdsPixels: Bool { picture != nil }

    /// Any thread, never encodes: `size`'s JPEG if it was made (or comes from the source).
    public func made(_ size: JPEGSize) -> Data? {
        if let given { return given }
        let key = key(size)
        return made.withLock { $0[key] }
    }

    /// `size`'s JPEG, encoded on this thread if nobody made it yet (with
    /// `encoder`, or one made for this call), else the one made.
    public func make(_ size: JPEGSize, encoder: JPEGEncoder? = nil) throws -> Data {
        if let done = made(size) { return done }
        guard let picture else { throw NoPixels() }
        let key = key(size)
        let encode = { [self] () throws -> Data in
            if let done = made.withLock({ $0[key] }) { return done }
            let start = MonotonicClock.nanos()
            let pixels = try key == .full ? picture.image : Self.shrunk(picture, rule: rule)
            let jpeg = try (encoder ?? JPEGEncoder(quality: quality)).encode(pixels)
            made.withLock { $0[key] = jpeg }
            encoded?(Double(MonotonicClock.nanos() - start) / 1e9)
            return jpeg
        }
        switch key {
        case .full: return try encodingFull.withLock { _ in try encode() }
        case .stream: return try encodingStream.withLock { _ in try encode() }
        }
    }

    /// The picture at the rule's size (`FramePicture.scaled`).
    static func shrunk(_ picture: FramePicture, rule: JPEGSizeRule) throws -> ImageBuffer {
        guard let size = rule.scaled(width: picture.width, height: picture.height) else { return picture.image }
        return try picture.scaled(width: size.width, height: size.height)
    }
}
