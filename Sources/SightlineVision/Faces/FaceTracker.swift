import Foundation

/// Gives faces stable ids across frames and smooths their roll and yaw.
///
/// Matching: each track's box is predicted to the frame's time with a
/// constant-velocity model, then observations and tracks are paired greedily
/// by a cost made of (1 - IoU), centre distance in face sizes and size
/// change, within gates. A track survives missed detections for up to
/// `maxAbsence` seconds; an unmatched observation starts a new track with a
/// new id (ids are never reused). When detection runs only every k-th frame,
/// `predict(at:)` carries the boxes on the frames between: by the motion
/// optical flow measured for the track (`move`: shift, zoom and turn of the
/// picture under the face, frame to frame), or where none was measured, by
/// the track's velocity and roll rate. Flow is kept as a chain of steps, so a
/// detection that comes back for a frame a few frames old is matched against
/// the box where the face was then, and its roll reading is compared with the
/// roll the flow gave for that frame.
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

    /// Where optical flow should start for each shown track: the time its
    /// chain of measured motion reaches (its last detection when none).
    package func flowEnds() -> [(id: Int, time: TimeInterval)] {
        tracks.compactMap { track in
            guard !track.missedLastUpdate, track.hits >= options.minimumHits else { return nil }
            return (track.id, track.flowEnd)
        }
    }

    /// Track `id` at `time` (box, landmarks and roll carried as `predict` does).
    package func observation(of id: Int, at time: TimeInterval) -> FaceObservation? {
        tracks.first { $0.id == id }?.observation(at: time, options: options)
    }

    /// Adds the motion optical flow measured for track `id` from the frame at
    /// `from` to the one at `to`. A step that does not start where the chain
    /// ends (flow failed on a frame) is joined to it by the velocity's shift.
    package func move(_ id: Int, by motion: FaceFlow.Motion, from: TimeInterval, to: TimeInterval) {
        guard let index = tracks.firstIndex(where: { $0.id == id }) else { return }
        tracks[index].append(FlowStep(from: from, to: to, motion: motion), options: options)
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
    func matchCost(predicted: PixelRect<Double>, observed: PixelRect<Double>) -> Double? {
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

/// One frame-to-frame motion of a face, measured by optical flow.
struct FlowStep {
    var from: TimeInterval
    var to: TimeInterval
    package var motion: FaceFlow.Motion

    static let identity = FaceFlow.Motion(transform: AffineTransform(a: 1, b: 0, c: 0, d: 0, e: 1, f: 0),
                                          degrees: 0, scale: 1, points: 0)
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
    /// Motion measured by optical flow, oldest first, each step starting
    /// where the one before ended; kept from the older of `lastSeen` and
    /// `rollTime` on (and at most `maxSteps`).
    var steps: [FlowStep] = []
    static let maxSteps = 120
    /// Times closer than this are the same frame's.
    static let sameTime = 1e-6

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
                let turned = span(from: rollTime, to: time)
                let predicted = current + rollTurn(turned, from: rollTime, to: time, options: options)
                let surprise = TrackGeometry.wrapDegrees(newRoll - predicted)
                roll = TrackGeometry.wrapDegrees(predicted + options.rollGain * surprise)
                if elapsed > 0.01 {
                    // The flow measured the turn itself; without it the
                    // reading's surprise corrects the rate.
                    let followed: Double
                    if let turned, turned.to > rollTime + Self.sameTime {
                        let measured = turned.motion.degrees / max(turned.to - rollTime, 0.01)
                        followed = rollRate + options.rollRateGain * (measured - rollRate)
                    } else {
                        followed = rollRate + options.rollRateGain * surprise / elapsed
                    }
                    rollRate = min(options.maxRollRate, max(-options.maxRollRate, followed))
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
        prune()
    }

    /// Where the chain of measured motion reaches (the last detection when empty).
    var flowEnd: TimeInterval { max(lastSeen, steps.last?.to ?? lastSeen) }

    mutating func append(_ step: FlowStep, options: FaceTracker.Options) {
        guard step.to > step.from else { return }
        let end = flowEnd
        if step.from < end - Self.sameTime { return }  // older than what the chain holds
        if step.from > end + Self.sameTime {
            // A frame without flow: joined by the velocity's shift.
            let (dx, dy) = displacement(from: end, to: step.from, options: options)
            var join = FlowStep.identity
            join.transform.c = dx
            join.transform.f = dy
            steps.append(FlowStep(from: end, to: step.from, motion: join))
        }
        steps.append(step)
        prune()
    }

    /// Drops steps no detection or roll reading can still need.
    private mutating func prune() {
        let keepFrom = min(lastSeen, rollTime) - Self.sameTime
        steps.removeAll { $0.to <= keepFrom }
        if steps.count > Self.maxSteps { steps.removeFirst(steps.count - Self.maxSteps) }
    }

    /// The motion from the frame at `from` to the frame at `to` or the last
    /// before it that the chain reaches (`to` of the result), composed from
    /// the steps; nil when the chain does not start at `from`.
    func span(from: TimeInterval, to: TimeInterval) -> FlowStep? {
        var composed = FlowStep(from: from, to: from, motion: FlowStep.identity)
        guard to > from + Self.sameTime else { return composed }
        guard let first = steps.firstIndex(where: { $0.from > from - Self.sameTime }),
              abs(steps[first].from - from) < Self.sameTime else {
            // Nothing measured after `from` yet is a chain of no motion; a
            // chain that starts later (or earlier, pruned) is none.
            return from >= flowEnd - Self.sameTime ? composed : nil
        }
        for step in steps[first...] where step.to <= to + Self.sameTime {
            let t = step.motion.transform, c = composed.motion.transform
            composed.motion.transform = AffineTransform(
                a: t.a * c.a + t.b * c.d, b: t.a * c.b + t.b * c.e, c: t.a * c.c + t.b * c.f + t.c,
                d: t.d * c.a + t.e * c.d, e: t.d * c.b + t.e * c.e, f: t.d * c.c + t.e * c.f + t.f)
            composed.motion.degrees += step.motion.degrees
            composed.to = step.to
        }
        return composed
    }

    /// The roll's turn from `from` to `to`: measured by flow as far as it
    /// reaches, by the rate for the rest.
    func rollTurn(_ turned: FlowStep?, from: TimeInterval, to: TimeInterval, options: FaceTracker.Options) -> Double {
        guard let turned else { return rollRate * min(max(to - from, 0), options.maxPredictionHorizon) }
        return turned.motion.degrees + rollRate * min(max(to - turned.to, 0), options.maxPredictionHorizon)
    }

    /// The last observation with the track's smoothed angles.
    var smoothedObservation: FaceObservation {
        var observation = last
        observation.roll = roll.map { $0 == -180 ? 180 : $0 }
        observation.yaw = yaw.map { min(90, max(-90, $0)) }
        observation.smile = smile
        return observation
    }

    /// The velocity's shift from `from` to `to`, counted from the last
    /// detection at most `maxPredictionHorizon` on.
    func displacement(from: TimeInterval, to: TimeInterval, options: FaceTracker.Options) -> (dx: Double, dy: Double) {
        let horizon = lastSeen + options.maxPredictionHorizon
        let dt = max(0, min(to, horizon) - max(from, lastSeen))
        return (velocity.x * dt, velocity.y * dt)
    }

    func predictedBox(at time: TimeInterval, options: FaceTracker.Options) -> PixelRect<Double> {
        observation(at: time, options: options).box
    }

    /// The smoothed observation carried to `time`: by the flow measured
    /// since the last detection as far as it reaches, then by the velocity.
    package func observation(at time: TimeInterval, options: FaceTracker.Options) -> FaceObservation {
        var observation = smoothedObservation
        var from = lastSeen
        if let moved = span(from: lastSeen, to: time), moved.to > lastSeen {
            observation = moved.motion.transform.apply(to: observation)
            from = moved.to
        }
        let (dx, dy) = displacement(from: from, to: time, options: options)
        observation.box.x += dx
        observation.box.y += dy
        observation.landmarks = observation.landmarks.map { TrackGeometry.shifted($0, by: dx, dy) }
        if let roll {
            let turn = rollTurn(span(from: rollTime, to: time), from: rollTime, to: time, options: options)
            observation.roll = TrackGeometry.wrapDegrees(roll + turn)
            if observation.roll == -180 { observation.roll = 180 }
        }
        return observation
    }
}
