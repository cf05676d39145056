import Foundation

/// One frame as the H.264 encoder made it: an access unit in Annex B (start
/// codes, no length prefixes), SPS and PPS before the slices of a keyframe.
public struct EncodedVideo: Sendable, Equatable {
    public let data: Data
    /// An IDR: a decoder can start here.
    public let isKeyframe: Bool

    public init(data: Data, isKeyframe: Bool) {
        self.data = data
        self.isKeyframe = isKeyframe
    }
}
