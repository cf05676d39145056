import Foundation
import SightlineVision
import SightlineSupport

/// Finds faces, keeps their ids across frames and names the ones it knows.
///
/// Detection runs on its own worker (FaceDetectionWorker) on the newest
/// frame, at most every `detectEvery` frames and as often as the policy
/// allows (FaceDetectionPolicy: fast while faces are tracked or the picture
/// changes, slow on a still scene or when nobody watches); each frame the
/// tracker takes any finished detection (recognition reads its crops from
/// the frame the detection ran on) and carries every face to this frame's
/// time by its motion, so a slow detector lowers how often faces are
/// re-found, never the frame rate. Between passes each face moves with the
/// picture under it: optical flow (FaceFlow) measures its shift, zoom and
/// turn from the last frame to this one, and the tracker carries its box,
/// landmarks and roll by that. A cut (SceneChangeProbe: most of the
/// picture changed from one frame to the next) ends every track at once.
///
/// Threads: owned by the pipeline (one frame at a time); the tracker is used
/// only here; FaceService guards what it shares with the HTTP side.
public final class FaceStage: PipelineStage {
    public let stage: StageName? = .faces
    private let worker: FaceDetectionWorker
    private let tracker: FaceTracker
    private let service: FaceService
    private let stats: PipelineStats?
    private let detectEvery: Int
    private let policy: FaceDetectionPolicy
    private let faceUse: @Sendable () -> FaceUse
    private let probe = SceneChangeProbe()
    private var framesSinceOffer = Int.max / 2
    /// When the last pass was due. Passes keep to a grid of the mode's
    /// interval rather than counting one interval from the last offer: frame
    /// times that do not divide the interval (25 fps, 10 passes a second)
    /// would round each wait up to a whole frame (every 3rd frame, 8.3
    /// passes a second).
    private var lastDueAt = -Double.infinity
    private var changedSinceOffer = true
    /// Passes and fine passes offered since the last cut (or the start), and
    /// when the last fine one was.
    private var passesOnPicture = 0
    private var finePassesOnPicture = 0
    private var lastFineAt = -Double.infinity
    /// Runs on the frame of a cut itself, on the pipeline thread (nil: none).
    private let cutDetector: FaceDetector?
    private var readFirstFrame = false
    private let limit: Int
    /// Optical flow between frames (nil: boxes move by their velocity).
    private let flow: FaceFlow?
    /// Flow measurements run so far (for tests and the benchmark).
    private(set) var flowMeasures = 0
    /// The faces shown on the last frame, and whether the last pass's faces
    /// were the same ones (none new to the tracker, none lost): faces that
    /// stay so are passed over at the policy's settled pace.
    private var shownIDs = Set<Int>()
    private var lastPassSettled = false
    /// The last frame's gray picture and time, where this frame's flow starts.
    private var previousGray: (image: ImageBuffer, capturedAt: Double)?
    /// The last frame's whole-frame flow pyramid (`FlowPyramid`), when it was built.
    private var previousPyramid: (image: ImageBuffer, pyramid: FlowPyramid)?
    /// Whether the worker's passes read the full frame when the stages analyse
    /// a smaller copy (`AnalysisSize`): YuNet letterboxes any frame into its
    /// 320 (usual) or 640 (fine) input, so its frame-wide passes cost the same,
    /// while its crops around tracked faces (confirming a missed track, reading
    /// a face upright) read the face's own pixels: a 70-pixel face at 1080p
    /// stays found and tracked where its 23 pixels on the 640 copy would be
    /// lost between fine passes. Haar scans the frame it is given, so it gets the copy.
    private let passesReadFullFrame: Bool
    /// The most a full-frame pass reads on the long side: a 4K frame is read
    /// at 1920x1080, where a face of 40 pixels (80 at 4K) still gives its crop
    /// enough to read, and the pass costs what it does at 1080p (made straight
    /// from the decoded picture, on the detecting thread).
    static let fullFrameLongSide = 1920

    /// `faceUse` says how the sinks use faces now (the most any asks, `FrameSink.faceUse`:
    /// a viewer, a relay, a broker, a face followed for an event); it is asked
    /// on the pipeline thread once a frame.
    public init(detector: FaceDetector, tracker: FaceTracker, service: FaceService, detectEvery: Int, limit: Int,
                policy: FaceDetectionPolicy = FaceDetectionPolicy(), faceUse: @escaping @Sendable () -> FaceUse = { .live },
                opticalFlow: Bool = true, cutDetector: FaceDetector? = nil, stats: PipelineStats? = nil,
                sharedThread: FaceDetectionThread? = nil) {
        flow = opticalFlow ? FaceFlow() : nil
        passesReadFullFrame = detector is YuNetDetector
        self.cutDetector = cutDetector
        self.limit = limit
        worker = FaceDetectionWorker(detector: detector, limit: limit, shared: sharedThread)
        self.tracker = tracker
        self.service = service
        self.stats = stats
        self.detectEvery = max(1, detectEvery)
        self.policy = policy
        self.faceUse = faceUse
    }

    deinit { worker.stop() }

    /// No detection under way or waiting (for tests).
    var detectionIdle: Bool { worker.isIdle }
    /// A finished detection waits to be taken on the next frame (for tests).
    var detectionResultWaiting: Bool { worker.hasResult }

    public func stop() { worker.stop() }

    public func process(_ context: inout FrameContext) throws {
        // Faces are found, tracked and read on the analysed picture (the
        // frame, or its copy at the detection size); their boxes leave
        // normalized to it, which fits the full frame.
        let frame = context.frame
        let image = context.image
        framesSinceOffer += 1
        let offerDue = framesSinceOffer >= detectEvery
        // The first frame read, or a cut: a new picture starts on this frame.
        var newPicture = false
        if offerDue {
            let gray = try context.gray ?? ImageOps.gray(image)
            context.gray = gray
            let reading = try probe.read(gray)
            if reading.changed { changedSinceOffer = true }
            if !readFirstFrame {
                readFirstFrame = true
                newPicture = true
                try findOnCut(image, gray: gray, at: frame.capturedAt)
            }
            if reading.cut {
                // Another picture: every face of the last one is gone with it,
                // at once (their boxes would drift over the new scene), and a
                // detection under way on an older frame is dropped; the next
                // pass starts now, whatever the pace.
                tracker.endAllTracks()
                lastPassSettled = false
                worker.discardResults(before: frame.capturedAt)
                lastDueAt = -Double.infinity
                passesOnPicture = 0
                finePassesOnPicture = 0
                stats?.faceSceneCut()
                newPicture = true
                try findOnCut(image, gray: gray, at: frame.capturedAt)
            }
        }
        let found = try worker.takeResult().map(onAnalysedPicture)
        if let found {
            stats?.stage(.faceDetect, seconds: found.seconds)
            if found.fine { stats?.faceFinePass() }
            // Crops for recognition and enrollment come from the frame the
            // faces were found in, where their landmarks are.
            let detected = tracker.update(found.observations, at: found.capturedAt)
            lastPassSettled = Set(detected.map(\.id)) == shownIDs
            let recognitionStart = MonotonicClock.nanos()
            _ = service.process(detected, frame: found.image, gray: found.gray, at: found.capturedAt)
            stats?.facePassParts(found.profile, seconds: found.seconds,
                                 recognitionSeconds: Double(MonotonicClock.nanos() - recognitionStart) / 1e9)
        }
        if flow != nil { try follow(&context, found: found) }
        let tracked = tracker.predict(at: frame.capturedAt)
        shownIDs = Set(tracked.map(\.id))
        if offerDue, let gray = context.gray {
            let use = faceUse()
            let mode = policy.mode(tracking: !tracked.isEmpty, changed: changedSinceOffer, watched: use != .none)
            stats?.faceMode(mode)
            let crowd = policy.isCrowd(tracked: tracked.count)
            let fine = policy.fine(passesOnPicture: passesOnPicture, secondsSinceFine: frame.capturedAt - lastFineAt,
                                   crowd: crowd, live: use == .live)
            // The passes that follow the first on a new picture (its fine
            // passes: small and tilted faces) run back to back, each as soon as
            // the last has ended, rather than at the active pace: every face
            // of a new picture is boxed within a few frames.
            let settling = mode == .active && passesOnPicture > 0
                && passesOnPicture <= policy.finePassesOnNewPicture && worker.isIdle
            // Settled faces are passed over at the settled pace in a crowd, and
            // at the idle pace wherever only an event follows them (nobody sees
            // them live).
            let settled = lastPassSettled && !tracked.isEmpty && (crowd || use == .following)
            let interval = policy.interval(mode, settled: settled, followedOnly: use == .following)
            let full = passesReadFullFrame && image.width != frame.width
            // The size the pass reads: the frame's, at most `Self.fullFrameLongSide`.
            let read = AnalysisSize(longSide: Self.fullFrameLongSide).scaled(width: frame.width, height: frame.height)
                ?? (frame.width, frame.height)
            let toFull = Double(read.width) / Double(image.width)
            let hints = newPicture ? [] : tracked.map { full ? $0.observation.scaled(by: toFull) : $0.observation }
            if settling || frame.capturedAt - lastDueAt >= interval * 0.95,
               worker.offer(full ? .picture(frame.picture, longSide: Self.fullFrameLongSide) : .image(image),
                            gray: full ? nil : gray, capturedAt: frame.capturedAt,
                            hints: hints, fine: fine ? finePassesOnPicture : nil,
                            analysed: full ? .init(image: image, gray: gray) : nil, watchedLive: use == .live) {
                probe.keepAsReference()
                passesOnPicture += 1
                if fine {
                    lastFineAt = frame.capturedAt
                    finePassesOnPicture += 1
                }
                framesSinceOffer = 0
                // A pass more than an interval late (the worker was busy, the
                // pace changed) or out of pace (settling) starts a new grid.
                let due = lastDueAt + interval
                lastDueAt = settling || frame.capturedAt - due >= interval ? frame.capturedAt : due
                changedSinceOffer = false
            }
        }
        let faces = service.process(tracked, frame: image, gray: context.gray, at: frame.capturedAt)
        context.detections += faces.map { $0.detection(frameWidth: image.width, frameHeight: image.height) }
    }

    /// A finished pass, on the picture the stages analyse.
    private struct Pass {
        let observations: [FaceObservation]
        /// The picture they were found in (their landmarks refer to it) and its gray.
        let image: ImageBuffer
        let gray: ImageBuffer?
        let capturedAt: Double
        let seconds: Double
        let fine: Bool
        let profile: FacePassProfile
    }

    /// A pass's result with its faces on the analysed copy of its frame when it
    /// read the full frame (`passesReadFullFrame`): the copy came back with the
    /// result (`analysed`), so a pass that ran while later offers replaced each
    /// other under load still lands on its own copy. (A list of the copies
    /// offered, capped at four, lost the running pass's copy that way, and its
    /// faces came out three times too large at 1080p.)
    private func onAnalysedPicture(_ result: FaceDetectionWorker.Result) -> Pass {
        guard let copy = result.analysed, copy.image.width != result.image.width else {
            return Pass(observations: result.observations, image: result.image, gray: result.gray,
                        capturedAt: result.capturedAt, seconds: result.seconds, fine: result.fine, profile: result.profile)
        }
        let factor = Double(copy.image.width) / Double(result.image.width)
        return Pass(observations: result.observations.map { $0.scaled(by: factor) }, image: copy.image, gray: copy.gray,
                    capturedAt: result.capturedAt, seconds: result.seconds, fine: result.fine, profile: result.profile)
    }

    /// The faces of a new picture (a cut, or the first frame) on its own first frame: a quick pass
    /// (`cutDetector`, the usual one without its second landmark pass) here,
    /// on the pipeline thread, since the worker's full pass on this frame
    /// ends a frame or more later. Their roll comes with that pass (a
    /// first-pass roll is some 6° off, and the tracker would carry the
    /// error); cuts are rare, and the few milliseconds are spent on the
    /// frames a viewer notices most. The worker's pass on the same frame
    /// gets no hints from it: its faces are new to that pass (read upright
    /// one at a time, the rest on the next pass, as after any cut).
    private func findOnCut(_ image: ImageBuffer, gray: ImageBuffer, at capturedAt: Double) throws {
        guard let cutDetector else { return }
        let start = MonotonicClock.nanos()
        var faces = try cutDetector.detect(in: image, gray: gray, limit: limit)
        for index in faces.indices { faces[index].roll = nil }
        stats?.stage(.faceDetect, seconds: Double(MonotonicClock.nanos() - start) / 1e9)
        stats?.faceCutFramePass()
        let found = tracker.update(faces, at: capturedAt)
        _ = service.process(found, frame: image, gray: gray, at: capturedAt)
    }

    /// Moves every shown track with the picture, from where its measured
    /// motion ends to this frame: from the last frame, or for a face a pass
    /// has just found, from the frame that pass looked at (a few frames
    /// back). A face whose points do not agree on a motion this frame is
    /// carried by its velocity, and its flow goes on from there.
    private func follow(_ context: inout FrameContext, found: Pass?) throws {
        guard let flow else { return }
        let now = context.frame.capturedAt
        let ends = tracker.flowEnds()
        guard !ends.isEmpty else {
            previousGray = nil
            previousPyramid = nil
            return
        }
        let gray = try context.gray ?? ImageOps.gray(context.image)
        context.gray = gray
        defer { previousGray = (gray, now) }
        // A crowd's flow is budgeted, so the frame path does not grow with the
        // faces: the tracks measured longest ago first (a pass's new readings,
        // which start on the pass's frame, before all); the others move by
        // their velocity on this frame and are measured on a later one.
        let budget = policy.flowBudget(tracked: ends.count)
        let measured = ends.count > budget ? Array(ends.sorted { $0.time < $1.time }.prefix(budget)) : ends
        var moves: [(id: Int, face: FaceObservation, source: ImageBuffer, from: Double)] = []
        for end in measured {
            let source: (image: ImageBuffer, capturedAt: Double)
            if let found, let foundGray = found.gray, abs(end.time - found.capturedAt) < 1e-6 {
                source = (foundGray, found.capturedAt)
            } else if let previousGray {
                source = previousGray
            } else {
                continue
            }
            guard source.capturedAt < now, let face = tracker.observation(of: end.id, at: source.capturedAt) else {
                continue
            }
            moves.append((end.id, face, source.image, source.capturedAt))
        }
        flowMeasures += moves.count
        // Many faces: one pyramid of each frame, shared (this frame's is kept
        // for the next); few: each face's own small ones.
        let wholeFrame = FaceFlow.prefersWholeFrame(moves.map(\.face.box), width: gray.width, height: gray.height)
        var pyramids: [ObjectIdentifier: FlowPyramid] = [:]
        if let kept = previousPyramid { pyramids[ObjectIdentifier(kept.image)] = kept.pyramid }
        func pyramid(of image: ImageBuffer) throws -> FlowPyramid {
            if let made = pyramids[ObjectIdentifier(image)] { return made }
            let made = try FlowPyramid(image, levels: flow.options.levels)
            pyramids[ObjectIdentifier(image)] = made
            return made
        }
        for move in moves {
            let motion = wholeFrame
                ? try flow.motion(of: move.face.box, landmarks: move.face.landmarks, from: pyramid(of: move.source),
                                  to: pyramid(of: gray))
                : try flow.motion(of: move.face.box, landmarks: move.face.landmarks, from: move.source, to: gray)
            guard let motion else { continue }
            tracker.move(move.id, by: motion, from: move.from, to: now)
        }
        previousPyramid = pyramids[ObjectIdentifier(gray)].map { (gray, $0) }
    }
}

extension FaceObservation {
    /// The same face on the frame scaled by `factor` (box and landmarks; angles and readings unchanged).
    func scaled(by factor: Double) -> FaceObservation {
        var face = self
        face.box = PixelRect(x: box.x * factor, y: box.y * factor, w: box.w * factor, h: box.h * factor)
        if var marks = landmarks {
            func scale(_ p: PixelPoint) -> PixelPoint { PixelPoint(x: p.x * factor, y: p.y * factor) }
            marks.rightEye = scale(marks.rightEye)
            marks.leftEye = scale(marks.leftEye)
            marks.nose = marks.nose.map(scale)
            marks.mouthRight = marks.mouthRight.map(scale)
            marks.mouthLeft = marks.mouthLeft.map(scale)
            face.landmarks = marks
        }
        return face
    }
}
