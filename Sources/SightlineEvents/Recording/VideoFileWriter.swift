import Foundation
import SightlineSupport
import SightlinePipeline

/// One fragmented MP4 file being written from the H.264 feed's access
/// units (an event's clip, or a segment of continuous recording), through
/// libavformat's MP4 muxer: an empty `moov` first, then a fragment at every
/// keyframe and at least every second, each flushed to the file as it is
/// made, so a `kill -9` or a power cut leaves a file that plays up to its
/// last whole fragment. The access units go in as the encoder made them,
/// the Sightline SEI with each frame's boxes included.
///
/// Times in the file: milliseconds from the first unit's capture
/// (monotonic clock), strictly increasing.
///
/// Owned by the recorder's thread; the muxer it holds is touched by no other.
final class VideoFileWriter {
    enum Failure: Error, CustomStringConvertible {
        case noKeyframe, noParameterSets, newParameterSets
        /// libavformat's words, and its code (a negative errno for a system error).
        case write(String, code: Int32)

        var description: String {
            switch self {
            case .noKeyframe: "a file must start on a keyframe"
            case .noParameterSets: "the keyframe has no SPS and PPS"
            case .newParameterSets: "the picture size or the encoder changed"
            case .write(let words, _): words
            }
        }

        /// A shim error as a `Failure`.
        init(_ error: Error) {
            if let av = error as? AVError {
                self = .write(av.message, code: av.code)
            } else {
                self = .write("\(error)", code: -1)
            }
        }
    }

    /// A failed write that the system refused (a full disk, permissions), as the storage error it is.
    static func storageError(_ error: Error) -> StorageError? {
        if case .write(_, let code)? = error as? Failure, code < -1, code > -4096 {
            return StorageError(errno: -code, path: "")
        }
        return StorageError(error, path: "")
    }

    let path: String
    /// Unix seconds of the first unit's capture.
    let start: Double
    private(set) var frames = 0
    private(set) var lastCapturedAt: Double
    private let muxer: H264Muxer
    private let parameterSets: Data
    private let firstNanos: UInt64
    private var lastMillis: Int64 = -1
    private var lastIndex: UInt64
    /// Units were lost since the last one written: deltas wait for a keyframe.
    private var waitingForKeyframe = false

    /// Opens the file (replacing one there) and writes `first`, which must be a keyframe.
    init(path: String, first: VideoFeed.Unit, width: Int, height: Int, timeoutSeconds: Double = 10) throws {
        guard first.isKeyframe else { throw Failure.noKeyframe }
        let sets = AnnexB.parameterSets(of: first.data)
        guard !sets.isEmpty else { throw Failure.noParameterSets }
        self.path = path
        start = first.capturedAt
        lastCapturedAt = first.capturedAt
        parameterSets = sets
        firstNanos = first.capturedNanos
        lastIndex = first.index
        do {
            muxer = try H264Muxer(url: "file:" + path, format: "mp4", width: width, height: height, parameterSets: sets,
                                  options: H264Muxer.fragmentedMP4Options, timeoutSeconds: timeoutSeconds)
        } catch {
            throw Failure(error)
        }
        try write(first, force: true)
    }

    /// Appends the next unit. After a gap in the feed (units lost) deltas
    /// are skipped until a keyframe; a keyframe with other SPS/PPS throws
    /// `newParameterSets` (a file holds one encoder's stream).
    func append(_ unit: VideoFeed.Unit) throws {
        guard unit.index > lastIndex else { return }
        if unit.index != lastIndex + 1 { waitingForKeyframe = true }
        lastIndex = unit.index
        if unit.isKeyframe {
            guard AnnexB.parameterSets(of: unit.data) == parameterSets else { throw Failure.newParameterSets }
            waitingForKeyframe = false
        }
        guard !waitingForKeyframe else { return }
        try write(unit, force: false)
    }

    private func write(_ unit: VideoFeed.Unit, force: Bool) throws {
        var millis = Int64((unit.capturedNanos &- firstNanos) / 1_000_000)
        if unit.capturedNanos < firstNanos { millis = 0 }
        if millis <= lastMillis { millis = lastMillis + 1 }
        do {
            try muxer.write(unit.data, milliseconds: millis, isKeyframe: unit.isKeyframe)
        } catch {
            throw Failure(error)
        }
        lastMillis = millis
        frames += 1
        lastCapturedAt = unit.capturedAt
    }

    /// Seconds of video written (to the end of the last frame, one frame's time guessed).
    var duration: Double {
        guard frames > 1 else { return 0 }
        let perFrame = Double(lastMillis) / 1000 / Double(frames - 1)
        return Double(lastMillis) / 1000 + perFrame
    }

    /// The file's size now.
    var bytes: Int { AtomicFile.size(of: path) ?? 0 }

    /// Writes the last fragment and the index. Throws when they could not be
    /// written (the fragments before stay readable).
    func finish() throws {
        do {
            try muxer.finish()
        } catch {
            throw Failure(error)
        }
    }
}
