import Foundation

/// Gives faces stable ids across frames and smooths their roll and yaw.
///
/// Matching: each track's box is predicted to the frame's time with a
/// constant-velocity model, then observations and tracks are paired greedily
/// by a cost made of (1 - IoU), centre distance in face sizes and size
/// change, within gates. A track survives missed detections for up to
/// `maxAbsence` seconds; an unmatched observation starts a new track with a
/// new id (ids are never reused). When detection runs only every k-th frame,
/// `predict(at:)` carries the boxes on the frames between.
///
/// Thread ownership: the pipeline thread, which calls `update` and `predict`
/// in frame order. Not Sendable.
public final class FaceTracker {
    public struct Options: Sendable {
        /// Seconds without a detection after which a track ends.
        public var maxAbsence: TimeInterval = 1.0
        /// A pair is considered when IoU reaches this ...
        public var minIoU = 0.1
        /// ... or the centres are closer than this many face sizes.
        public var maxCentreDistance = 1.0
        /// Pairs whose sizes differ by more than this factor never match.
        public var maxSizeRatio = 1.6
        /// Weight of a new velocity measurement (0...1).
        public var velocitySmoothing = 0.4
        /// Weight of a new roll or yaw (0...1); smaller is smoother.
        public var angleSmoothing = 0.35
        /// Roll is followed with its rate (an alpha-beta filter), so a steady
        /// turn is not trailed: the weight of a new roll reading, and of its
        /// surprise in the rate.
        public var rollGain = 0.5
        public var rollRateGain = 0.2
        /// The roll rate is kept within this (degrees a second).
        public var maxRollRate = 180.0
        /// Motion is extrapolated at most this far past the last detection.
        public var maxPredictionHorizon: TimeInterval = 0.5
        /// Detections a track needs before it is reported.
        public var minimumHits = 1

        public init() {}
    }

    public let options: Options
    private var tracks: [Track] = []
    private var nextID = 1

    public init(options: Options = Options()) { self.options = options }

    /// Ids of every live track, reported or not.
    public var activeTrackIDs: [Int] { tracks.map(\.id) }

    /// Ends every track (the picture was cut to another scene); ids go on
    /// counting, so a face seen again gets a new one.
    public func endAllTracks() {
        tracks.removeAll()
    }

    /// Feeds one frame's detections (taken at `time`, seconds) and returns the
    /// tracks seen in it, with their ids and smoothed angles.
    public func update(_ observations: [FaceObservation], at time: TimeInterval) -> [TrackedFace] {
        tracks.removeAll { time - $0.lastSeen > options.maxAbsence }
        let pairs = assign(observations, at: time)
        var matchedTracks = Set<Int>()
        var reported: [TrackedFace] = []
        for (trackIndex, observationIndex) in pairs {
            tracks[trackIndex].absorb(observations[observationIndex], at: time, options: options)
            matchedTracks.insert(trackIndex)
        }
        for index in tracks.indices where !matchedTracks.contains(index) { tracks[index].missedLastUpdate = true }
        let matchedObservations = Set(pairs.map(\.1))
        for (index, observation) in observations.enumerated() where !matchedObservations.contains(index) {
            tracks.append(Track(id: nextID, observation: observation, at: time))
            nextID += 1
        }
        for track in tracks where !track.missedLastUpdate && track.hits >= options.minimumHits {
            reported.append(TrackedFace(id: track.id, observation: track.smoothedObservation, isPredicted: false))
        }
        return reported
    }

    /// The tracks seen at the last detection, moved to `time` by their motion;
    /// for frames on which detection does not run. Changes nothing.
    public func predict(at time: TimeInterval) -> [TrackedFace] {
        tracks.compactMap { track in
            guard !track.missedLastUpdate, track.hits >= options.minimumHits,
                  time - track.lastSeen <= options.maxAbsence else { return nil }
            return TrackedFace(id: track.id, observation: track.observation(at: time, options: options),
                               isPredicted: true)
        }
    }

    /// Greedy pairing of tracks and observations by ascending cost.
    private func assign(_ observations: [FaceObservation], at time: TimeInterval) -> [(Int, Int)] {
        var candidates: [(cost: Double, track: Int, observation: Int)] = []
        for (t, track) in tracks.enumerated() {
            let predicted = track.predictedBox(at: time, options: options)
            for (o, observation) in observations.enumerated() {
                if let cost = matchCost(predicted: predicted, observed: observation.box) {
                    candidates.append((cost, t, o))
                }
            }
        }
        candidates.sort { $0.cost < $1.cost }
        var usedTracks = Set<Int>(), usedObservations = Set<Int>()
        var pairs: [(Int, Int)] = []
        for candidate in candidates where !usedTracks.contains(candidate.track)
            && !usedObservations.contains(candidate.observation) {
            usedTracks.insert(candidate.track)
            usedObservations.insert(candidate.observation)
            pairs.append((candidate.track, candidate.observation))
        }
        return pairs
    }

    /// nil when the pair is outside the gates; otherwise lower is better.
    func matchCost(predicted: TrackGeometry.Box, observed: TrackGeometry.Box) -> Double? {
        let iou = TrackGeometry.intersectionOverUnion(predicted, observed)
        let a = TrackGeometry.centre(predicted), b = TrackGeometry.centre(observed)
        let size = TrackGeometry.size(predicted)
        let distance = ((a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y)).squareRoot() / size
        let sizeRatio = TrackGeometry.size(observed) / size
        guard iou >= options.minIoU || distance <= options.maxCentreDistance,
              sizeRatio <= options.maxSizeRatio, sizeRatio >= 1 / options.maxSizeRatio else { return nil }
        return (1 - iou) + distance + abs(log(sizeRatio))
    }
}

/// One face followed over time (the tracker's private state).
private struct Track {
    let id: Int
    var last: FaceObservation
    var lastSeen: TimeInterval
    var velocity = PixelPoint(x: 0, y: 0)  // pixels per second
    var roll: Double?
    /// Degrees a second, and when `roll` was last read.
    var rollRate = 0.0
    var rollTime: TimeInterval
    var yaw: Double?
    var smile: Double?
    var hits = 1
    var missedLastUpdate = false

    init(id: Int, observation: FaceObservation, at time: TimeInterval) {
        self.id = id
        last = observation
        lastSeen = time
        roll = observation.roll.map(TrackGeometry.wrapDegrees)
        rollTime = time
        yaw = observation.yaw
        smile = observation.smile
    }

    mutating func absorb(_ observation: FaceObservation, at time: TimeInterval, options: FaceTracker.Options) {
        let dt = time - lastSeen
        if dt > 0 {
            let from = TrackGeometry.centre(last.box), to = TrackGeometry.centre(observation.box)
            let measured = PixelPoint(x: (to.x - from.x) / dt, y: (to.y - from.y) / dt)
            // The second sighting gives the first velocity; later ones are smoothed in.
            let weight = hits == 1 ? 1 : options.velocitySmoothing
            velocity = PixelPoint(x: velocity.x + weight * (measured.x - velocity.x),
                                  y: velocity.y + weight * (measured.y - velocity.y))
        }
        if let newRoll = observation.roll {
            if let current = roll {
                let elapsed = max(0, time - rollTime)
                let predicted = current + rollRate * min(elapsed, options.maxPredictionHorizon)
                let surprise = TrackGeometry.wrapDegrees(newRoll - predicted)
                roll = TrackGeometry.wrapDegrees(predicted + options.rollGain * surprise)
                if elapsed > 0.01 {
                    rollRate = min(options.maxRollRate, max(-options.maxRollRate,
                                                            rollRate + options.rollRateGain * surprise / elapsed))
                }
            } else {
                roll = TrackGeometry.wrapDegrees(newRoll)
            }
            rollTime = time
        }
        if let newYaw = observation.yaw {
            yaw = yaw.map { $0 + options.angleSmoothing * (newYaw - $0) } ?? newYaw
        }
        // A smile changes slowly and its reading is noisy; eyes are taken as
        // read, since smoothing would hide a blink.
        if let newSmile = observation.smile {
            smile = smile.map { $0 + options.angleSmoothing * (newSmile - $0) } ?? newSmile
        }
        last = observation
        lastSeen = time
        hits += 1
        missedLastUpdate = false
    }

    /// The last observation with the track's smoothed angles.
    var smoothedObservation: FaceObservation {
        var observation = last
        observation.roll = roll.map { $0 == -180 ? 180 : $0 }
        observation.yaw = yaw.map { min(90, max(-90, $0)) }
        observation.smile = smile
        return observation
    }

    func displacement(at time: TimeInterval, options: FaceTracker.Options) -> (dx: Double, dy: Double) {
        let dt = min(max(time - lastSeen, 0), options.maxPredictionHorizon)
        return (velocity.x * dt, velocity.y * dt)
    }

    func predictedBox(at time: TimeInterval, options: FaceTracker.Options) -> TrackGeometry.Box {
        let (dx, dy) = displacement(at: time, options: options)
        return (x: last.box.x + dx, y: last.box.y + dy, w: last.box.w, h: last.box.h)
    }

    /// The smoothed observation carried to `time` by the track's motion.
    func observation(at time: TimeInterval, options: FaceTracker.Options) -> FaceObservation {
        var observation = smoothedObservation
        let (dx, dy) = displacement(at: time, options: options)
        observation.box = predictedBox(at: time, options: options)
        if let roll {
            let ahead = min(max(time - rollTime, 0), options.maxPredictionHorizon)
            observation.roll = TrackGeometry.wrapDegrees(roll + rollRate * ahead)
            if observation.roll == -180 { observation.roll = 180 }
        }
        observation.landmarks = observation.landmarks.map { TrackGeometry.shifted($0, by: dx, dy) }
        return observation
    }
}
