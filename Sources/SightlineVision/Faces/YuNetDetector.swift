import CSightlineOpenCV
import Foundation
import SightlineSupport

/// Face detection with the YuNet 2023mar ONNX model through cv::dnn.
///
/// The frame (or its region of interest) is letterboxed into an input whose
/// longer side is the model's size (320 or 640, read from the model file) and
/// whose shorter side is only as long as the frame needs (`Letterbox`); the 12 outputs
/// are decoded in Swift (`YuNetDecoder`), suppressed (NMS) and mapped back to
/// frame pixels. An optional second pass (`LandmarkRefiner`) re-reads the
/// landmarks on an upright, upscaled crop of each face for accurate roll.
///
/// Belongs to the one thread that calls it (see FaceDetector): it keeps the network and its
/// input and output buffers between frames and is not thread-safe.
public final class YuNetDetector: FaceDetector {
    public struct Options: Sendable {
        /// Minimum score (sqrt(cls * obj)) for a face.
        public var scoreThreshold = 0.75
        /// Faces overlapping a better one by more than this IoU are dropped.
        public var nmsThreshold = 0.3
        /// Only look for faces here (normalized to the frame); nil = everywhere.
        public var regionOfInterest: NormalizedBox?
        /// Re-read landmarks on upscaled crops of each face (up to six extra
        /// 320x320 forward passes per face) for a roll accurate to a few
        /// degrees. Too slow for every live frame, so off by default.
        public var refineLandmarks = false
        /// Where the second pass starts, around the first-pass roll (degrees):
        /// more starts escape a wrong first reading, each costs up to six passes.
        public var refineStartOffsets: [Double] = [0]
        /// Live pacing of the second pass: a face that a tracked face (hint)
        /// overlaps is refined with one crop turned by the tracked roll (one
        /// forward pass), and only when its last refinement is this many
        /// seconds old; in between it reports no roll, and the tracker carries
        /// the roll by its rate. A new face gets one crop turned by its
        /// first-pass roll at once. 0 refines every face fully on every pass
        /// (still photos).
        public var refineEverySeconds = 0.0
        /// Side of the crop of that live refinement (a multiple of 32): 320
        /// reads roll best; 224 costs half as much, 160 a quarter, each with
        /// a larger roll error (docs/faces.md, "Faces on a budget").
        public var trackedCropSize = LandmarkRefiner.defaultCropSize
        /// What runs the network (`faces.runtime`).
        public var runtime = YuNetRuntime.auto
        /// A tracked face seen to hold still (see `LandmarkRereadSchedule.interval`: its
        /// track not turned by `steadyRollDegrees` since its last reading, its last two
        /// readings and the track at the last one within twice that; most faces, most
        /// of the time) waits up to this many times `refineEverySeconds` instead (2 s).
        public var steadyRefineFactor = 20.0
        public var steadyRollDegrees = 1.5
        /// When nothing is found, look again on copies turned by these angles
        /// (for strongly tilted faces). Costs one pass per angle on empty frames,
        /// so live pipelines leave it empty.
        public var rotationFallbackAngles: [Double] = []
        /// Live: a tracked face (hint) that the pass did not find is looked
        /// for once more on a crop where it was predicted, turned by its
        /// tracked roll (one forward pass on a face at the crop's scale,
        /// where the frame-wide pass sees it small and possibly tilted). Found
        /// with at least `scoreThreshold`, it is reported (its crop's
        /// landmarks count as a refinement); not found, it is missed, and the
        /// tracker hides it at once.
        public var confirmMissedTracks = false
        /// Live: a tracked face narrower than this at the usual frame-wide
        /// pass's scale (pixels of the model's input; the model finds faces
        /// from about 20) is one that pass cannot see, only a fine pass or a
        /// crop: a 50-pixel face at 1080p is 8 there. Every usual pass misses
        /// it, and a confirming crop on each (10 a second, 7-10 ms each) was
        /// most of a 1080p camera's face work while one was in view. Such a
        /// face is confirmed every `unseenConfirmEverySeconds`; in between it
        /// is carried as the tracker predicts it (optical flow follows its
        /// box and roll on every frame), without a roll reading, and a face
        /// that left is boxed up to that long after.
        public var unseenFaceWidth = 16.0
        public var unseenConfirmEverySeconds = 0.5
        /// Live: how many faces new to the tracker a pass reads upright at
        /// once (one or two crops each); the others are reported without
        /// that reading, so a pass that finds many (a cut to a crowd) ends
        /// sooner, and their roll comes with the next pass. nil: all.
        public var newFacesReadAtOnce: Int? = nil
        /// The long side a fine pass (`detect(..., fine: n)`) gives the
        /// frame: 640 finds faces down to about 20 pixels wide where the
        /// model's 320 finds them from about 40.
        public var fineInputSize = 640
        /// The fine passes on a picture look for faces of each of these tilts in turn (roll,
        /// degrees clockwise; the frame is turned back by it), so a head
        /// tilted further than the model finds upright (about 30°) is found
        /// by one of them.
        public var fineTurns: [Double] = [0, 30, -30]
        /// Read `smile` and `eyesClosed` from each face's pixels (about 2-3 ms a
        /// face with dlib's model: the fit costs the same at any size).
        public var attributes: FaceAttributeReader.Options? = FaceAttributeReader.Options()
        /// Live pacing of the attributes: a face read less than this many seconds
        /// ago (matched by its box, as for refinement) is not read again and
        /// carries its last reading. 0 reads every face on every pass.
        public var attributesEverySeconds = 0.0
        /// A face whose reading agrees with its last one (`AttributeSchedule`)
        /// waits twice as long for the next, up to this many times
        /// `attributesEverySeconds`; a reading that differs brings it back to
        /// one. 1: every face at `attributesEverySeconds`.
        public var steadyAttributesFactor = 1.0
        /// Live: at most this many faces are read for attributes in one pass
        /// (about 2-4 ms each), so a crowd costs a pass no more than a few
        /// faces do. The faces due are read never-read first, then the
        /// largest; the rest carry their last reading (none yet: omitted)
        /// and are read on later passes. nil: every face due.
        public var attributesPerPass: Int? = nil
        /// Refuse faces that are not a person's (a dog's, a cat's) by a
        /// second look (`PersonFaceCheck`). Live, only faces new to the
        /// tracker are looked at (those tracked passed when they were new).
        public var checkPersons = true
        /// Live: a new face the person check refused while the frame's edge
        /// cut it is left out of the passes for this many seconds while it
        /// stays at the edge (`RefusedEdgeFaces`). 0: checked on every pass.
        public var refusedEdgeFaceSeconds = 0.0
        /// At most this many faces new to the tracker are checked in one
        /// pass (about 3 ms each), the largest first; the others are left out
        /// of this pass's faces, to be found and checked by a later one. The
        /// cut-frame pass, which runs on the pipeline thread, takes
        /// `cutFramePersonChecks`. nil: every new face.
        public var personChecksPerPass: Int? = nil
        /// Live: a pass whose tracked faces (hints) number at least this is
        /// a crowd's. Its crops (confirming a missed track, reading a face
        /// upright) are cut at `crowdCropUpscale` times the face's own pixels
        /// rather than at `trackedCropSize` (a 50-pixel face's crop is 160
        /// pixels, not 320: a quarter of the forward pass), and at most
        /// `crowdCropsPerPass` are run, the faces read longest ago first; a
        /// missed track left for a later pass is carried as the tracker
        /// predicted it. Fewer faces are read as before. nil: never a crowd.
        public var crowdFaces: Int? = nil
        public var crowdCropsPerPass = 2
        public var crowdCropUpscale = 2.0
        /// A crowd's pass reads this many faces' attributes (the rest carry
        /// their last reading): ten faces at 10 passes a second are each read
        /// about once a second, not four times.
        public var crowdAttributesPerPass = 1

        public init() {}

        /// Settings for still photos (`sightline detect`): time matters less than finding faces.
        public static var stillImage: Options {
            var options = Options()
            options.refineLandmarks = true
            options.refineStartOffsets = LandmarkRefiner.defaultStartOffsets
            options.rotationFallbackAngles = [-30, 30, -60, 60]
            return options
        }
    }

    public let options: Options
    public let modelPath: String
    public var inputSize: Int { network.inputSize }
    /// What runs the network: "onnxruntime 1.32.0" or "opencv".
    public var runtimeName: String { network.runtimeName }
    /// Why `faces.runtime: auto` fell back to OpenCV (nil when it did not).
    public var runtimeNote: String? { network.runtimeNote }
    public var name: String { "yunet-\(network.inputSize)" }

    private let network: YuNetNetwork
    let refiner: LandmarkRefiner
    /// The network inputs, by shape (width, height): usual and fine passes
    /// alternate between two, each kept between passes.
    private var inputs: [[Int]: ImageBuffer] = [:]
    private let attributes: FaceAttributeReader?
    private let personCheck: PersonFaceCheck?
    /// The schedules of a live pass's extra looks, each keeping what it
    /// needs from one pass to the next.
    private var rereadSchedule: LandmarkRereadSchedule
    private let personCheckSchedule: PersonCheckSchedule
    /// New faces refused at the frame's edge a moment ago (live).
    private var refusedEdgeFaces: RefusedEdgeFaces
    private var attributeSchedule: AttributeSchedule
    /// The tilt each fine pass looks for.
    private var fineTurns: FineTurnSchedule
    /// What the last pass did and where its time went.
    public private(set) var lastPass = FacePassProfile()
    public var lastPassProfile: FacePassProfile? { lastPass }

    /// `models`: loaded parts shared with other cameras' detectors, all used
    /// on one thread (`FaceSharing`); nil: loaded for this detector alone.
    public init(modelPath: String, options: Options = Options(), models: YuNetModels? = nil) throws {
        let models = try models ?? YuNetModels(modelPath: modelPath, options: options)
        network = models.network
        self.modelPath = modelPath
        self.options = options
        refiner = LandmarkRefiner(network: network)
        refiner.startOffsets = options.refineStartOffsets
        refiner.trackedCropSize = options.trackedCropSize
        attributes = options.attributes == nil ? nil : models.attributes
        personCheck = options.checkPersons ? models.personCheck : nil
        fineTurns = FineTurnSchedule(turns: options.fineTurns)
        rereadSchedule = LandmarkRereadSchedule(options)
        personCheckSchedule = PersonCheckSchedule(perPass: options.personChecksPerPass)
        refusedEdgeFaces = RefusedEdgeFaces(seconds: options.refusedEdgeFaceSeconds)
        attributeSchedule = AttributeSchedule(everySeconds: options.attributesEverySeconds,
                                              steadyFactor: options.steadyAttributesFactor)
    }

    public func detect(in frame: ImageBuffer, gray: ImageBuffer?, limit: Int) throws -> [FaceObservation] {
        try detect(in: frame, gray: gray, limit: limit, hints: [])
    }

    /// The cut-frame pass's `personChecksPerPass`: the four largest new
    /// faces (about 12 ms on the pipeline thread); the others are boxed when
    /// the worker's pass on that frame ends.
    public static let cutFramePersonChecks = 4

    /// The live server's `attributesPerPass`: four faces, about 10 ms of a pass.
    public static let liveAttributesPerPass = 4
    /// The live server's `steadyAttributesFactor`: a face whose smile and
    /// eyes hold is read once a second at 4 readings a second otherwise; at
    /// 1080p the readings were a third of the face work of a watched camera.
    public static let liveSteadyAttributesFactor = 4.0
    /// The live server's `crowdFaces`: eight tracked faces make a crowd.
    public static let liveCrowdFaces = 8
    /// The live server's `refusedEdgeFaceSeconds`: a face refused at the edge
    /// is checked again a second later, or once wholly in view.
    public static let liveRefusedEdgeFaceSeconds = 1.0

    /// One pass: the frame-wide passes (`findFaces`; a fine one's tilt from
    /// `fineTurns`), then the looks at single faces that a live pass paces:
    /// missed tracks confirmed by a crop and landmarks read again upright
    /// (`rereadSchedule`), within a crowd's budget (`CrowdBudget`); the person
    /// check of new faces (`personCheckSchedule`); the smile and eyes readings
    /// (`attributeSchedule`). `lastPass` tells what it did and where its time went.
    public func detect(in frame: ImageBuffer, gray: ImageBuffer?, limit: Int, hints: [FaceObservation], fine: Int?)
        throws -> [FaceObservation] {
        try detect(in: frame, smaller: nil, gray: gray, limit: limit, hints: hints, fine: fine)
    }

    /// Single faces' looks come this many times further apart while nobody
    /// watches faces live: landmark re-reads (`refineEverySeconds`) and smile
    /// and eyes readings (`attributesEverySeconds`). An event's clip carries
    /// the tracked roll and the last readings between them; at 1080p and 2
    /// passes a second they were a re-read (10 ms) and a reading (5 ms) on
    /// every pass, a third of the face work of a camera nobody watched.
    public static let unwatchedPaceFactor = 4.0

    /// The detecting thread, before a pass: paces the single faces' looks by who watches.
    public func pace(watchedLive: Bool) {
        let factor = watchedLive ? 1 : Self.unwatchedPaceFactor
        rereadSchedule.everySeconds = options.refineEverySeconds * factor
        attributeSchedule.everySeconds = options.attributesEverySeconds * factor
    }

    /// The pass's frame and its smaller copy (`detect(in:smaller:...)`), while a pass runs.
    private var frameWide: (frame: ImageBuffer, smaller: ImageBuffer)?

    public func detect(in frame: ImageBuffer, smaller: ImageBuffer?, gray: ImageBuffer?, limit: Int,
                       hints: [FaceObservation], fine: Int?) throws -> [FaceObservation] {
        frameWide = smaller.flatMap { smaller in
            smaller.channels == frame.channels && smaller.width < frame.width && smaller.height < frame.height
                ? (frame, smaller) : nil
        }
        defer { frameWide = nil }
        var profile = FacePassProfile()
        // How this pass's large forward passes hand their buffers back (`YuNetNetwork.LargePassTrim`):
        // paced on a large frame, at once on a small one and on a new picture's back-to-back fine passes.
        let newPictureFine = fine.map { $0 < FaceDetectionPolicy.defaultFinePassesOnNewPicture } ?? false
        network.largePassTrim = frame.width * frame.height > YuNetNetwork.pacedTrimPixels && !newPictureFine
            ? .paced : .atOnce
        let forwardsBefore = refiner.forwardPasses
        defer {
            profile.cropForwards = refiner.forwardPasses - forwardsBefore
            lastPass = profile
        }
        guard limit > 0, let region = searchRegion(frame) else { return [] }
        var crowd = CrowdBudget(options, tracked: hints.count)
        var (faces, turnedFrom) = try findFaces(in: frame, region: region, limit: limit, hints: hints, fine: fine,
                                                crowd: crowd, profile: &profile)
        let now = Double(MonotonicClock.nanos()) / 1e9
        if personCheck != nil, refusedEdgeFaces.seconds > 0 {
            (faces, turnedFrom) = leavingOutRefusedAtEdge(faces, turnedFrom: turnedFrom, hints: hints, frame: frame, now: now)
        }
        let cropStart = MonotonicClock.nanos()
        rereadSchedule.beginPass()
        // Faces found by a confirming crop (already read upright), or carried
        // past a crowd's crop budget: not read again in this pass.
        var confirmed = Set<Int>(), unrefined = Set<Int>()
        if options.confirmMissedTracks {
            let passScale = Double(network.inputSize) / Double(max(region.w, region.h))
            try confirmMissedTracks(&faces, hints: hints, in: frame, limit: limit, now: now, passScale: passScale,
                                    crowd: &crowd, confirmed: &confirmed, unrefined: &unrefined, profile: &profile)
        }
        if options.refineLandmarks {
            try readLandmarks(&faces, skipping: confirmed, hints: hints, in: frame, turnedFrom: turnedFrom, now: now,
                              crowd: &crowd, unrefined: &unrefined, profile: &profile)
        }
        if options.refineLandmarks || options.confirmMissedTracks { rereadSchedule.endPass() }
        profile.cropSeconds = Self.seconds(since: cropStart)
        faces = faces.map(FaceGeometry.withPose)
        // A first-pass roll reads tilted faces short; the tracker's own is better.
        for index in unrefined { faces[index].roll = nil }
        guard !faces.isEmpty else { return faces }
        // The frame in gray only for a pass that checks or reads a face (most
        // passes over tracked faces do neither): 1 ms at 1080p.
        var grayMade = gray
        func grayFrame() throws -> ImageBuffer {
            if let grayMade { return grayMade }
            let made = try ImageOps.gray(frame)
            grayMade = made
            return made
        }
        if let personCheck {
            faces = try checkPersons(faces, hints: hints, in: frame, now: now, gray: grayFrame, check: personCheck,
                                     profile: &profile)
        }
        guard let attributes, !faces.isEmpty else { return faces }
        let attributeStart = MonotonicClock.nanos()
        defer { profile.attributeSeconds = Self.seconds(since: attributeStart) }
        faces = try attributeSchedule.pass(faces, at: Double(MonotonicClock.nanos()) / 1e9,
                                           budget: crowd.attributesPerPass(options.attributesPerPass)) {
            profile.attributeReads += 1
            return try attributes.read($0, gray: grayFrame(), profile: &profile)
        }
        return faces
    }

    /// The frame-wide passes: the usual one, a fine one when `fine` asks for
    /// it, and the rotation fallback when they found nothing. `turnedFrom`:
    /// the faces from this index on were found on a turned frame.
    private func findFaces(in frame: ImageBuffer, region: PixelRect<Int>, limit: Int,
                           hints: [FaceObservation], fine: Int?, crowd: CrowdBudget,
                           profile: inout FacePassProfile) throws -> (faces: [FaceObservation], turnedFrom: Int) {
        let start = MonotonicClock.nanos()
        defer { profile.detectSeconds = Self.seconds(since: start) }
        var faces = try detectOnce(frame, region: region, limit: crowd.searchLimit(limit), inputSize: network.inputSize)
        faces = crowd.kept(faces, hints: hints, limit: limit)
        var turnedFrom = Int.max
        // A fine pass adds faces only below the limit: with the usual pass's
        // faces already at it (a crowd at `maxFaces`), its result would be
        // the usual one, so it is not run.
        if let fine, faces.count < limit {
            // A fine pass adds what it finds that the usual one did not (faces
            // both find keep the usual pass's landmarks, read upright): it looks
            // at the region at up to `fineInputSize` on its long side (never
            // smaller than the model's size, never upscaled past 1:1), turned
            // back by the tilt whose turn it is.
            profile.finePass = true
            let size = max(network.inputSize, min(options.fineInputSize, max(region.w, region.h)))
            let tilt = fineTurns.tilt(forPass: fine, hints: hints)
            let found = tilt == 0 ? try detectOnce(frame, region: region, limit: limit, inputSize: size)
                : try detectTurned(frame, region: region, limit: limit, inputSize: size, angles: [-tilt])
            let usual = faces
            faces += found.filter { FaceGeometry.sameFace($0.box, in: usual, box: { $0.box }) == nil }
            faces = Array(faces.prefix(limit))
            if tilt != 0 { turnedFrom = usual.count }
        }
        if faces.isEmpty {
            faces = try detectTurned(frame, region: region, limit: limit, inputSize: network.inputSize,
                                     angles: options.rotationFallbackAngles)
        }
        return (faces, turnedFrom)
    }

    /// Live (`confirmMissedTracks`): each tracked face (hint) the frame-wide
    /// passes missed is looked for on a crop where it was predicted, while
    /// the pass has room under `limit`; found, it is added (`confirmed`: read
    /// upright already). Past a crowd's crop budget it is added as predicted,
    /// without a roll (`unrefined`), to be looked at first next time; so is
    /// a face too small for the usual pass (`passScale`: its input's pixels
    /// per frame pixel) confirmed less than `unseenConfirmEverySeconds` ago.
    private func confirmMissedTracks(_ faces: inout [FaceObservation], hints: [FaceObservation], in frame: ImageBuffer,
                                     limit: Int, now: Double, passScale: Double, crowd: inout CrowdBudget,
                                     confirmed: inout Set<Int>, unrefined: inout Set<Int>,
                                     profile: inout FacePassProfile) throws {
        let found = faces
        let missed = crowd.cropOrder(hints.filter { FaceGeometry.sameFace($0.box, in: found, box: { $0.box }) == nil },
                                     readAt: { rereadSchedule.lastReadAt($0.box) })
        for hint in missed where faces.count < limit {
            guard !readLately(unseenBy: passScale, hint, now: now), crowd.takeCrop() else {
                // Too small for the usual pass and confirmed a moment ago, or a
                // crowd's budget is spent: carried as predicted (no roll
                // reading: the tracker carries its own), looked at first next time.
                var carried = hint
                carried.roll = nil
                unrefined.insert(faces.count)
                confirmed.insert(faces.count)
                faces.append(carried)
                rereadSchedule.carry(rereadSchedule.last(hint.box), to: hint.box)
                continue
            }
            // A face reported before its upright reading has no tracked
            // roll yet; its landmarks' roll (from a turned fine pass, say) is nearer than upright.
            let roll = hint.roll ?? FaceGeometry.withPose(hint).roll ?? 0
            guard let found = try refiner.confirm(hint, in: frame, roll: roll, minScore: options.scoreThreshold,
                                                  side: crowd.cropSide(for: hint)) else { continue }
            profile.confirmations += 1
            confirmed.insert(faces.count)
            faces.append(found)
            rereadSchedule.record(.init(box: found.box, at: now, tracked: hint.roll,
                                        reading: FaceGeometry.withPose(found).roll,
                                        previousReading: rereadSchedule.last(found.box)?.reading))
        }
    }

    /// Whether `hint`, a tracked face the usual pass missed, is one that pass
    /// cannot see (`unseenFaceWidth` at `passScale`) and was read less than
    /// `unseenConfirmEverySeconds` ago. A face never read upright (no tracked
    /// roll) is not.
    /// Tried and dropped: confirming a turning one as often as its landmark
    /// re-reads come (0.1 s). The readings of a 50-pixel face scatter past the
    /// steady test's tolerance, so the small face of the 1080p camera video,
    /// which does not turn, was confirmed 8 times a second instead of 2, and
    /// the live face video's roll error was no better (p90 6.1-7.7° against 7.6°).
    private func readLately(unseenBy passScale: Double, _ hint: FaceObservation, now: Double) -> Bool {
        guard hint.box.w * passScale < options.unseenFaceWidth, hint.roll != nil,
              let last = rereadSchedule.last(hint.box) else { return false }
        return !PassPace.isDue(lastAt: last.at, now: now, every: options.unseenConfirmEverySeconds)
    }

    /// The second landmark pass over the faces not `confirmed`: every face
    /// fully (still photos), or live as `rereadSchedule` paces it, within a
    /// crowd's crop budget. A face left unread is added to `unrefined`.
    private func readLandmarks(_ faces: inout [FaceObservation], skipping confirmed: Set<Int>, hints: [FaceObservation],
                               in frame: ImageBuffer, turnedFrom: Int, now: Double, crowd: inout CrowdBudget,
                               unrefined: inout Set<Int>, profile: inout FacePassProfile) throws {
        // A crowd's budget goes to the faces read longest ago first.
        let boxes = faces.map(\.box)
        let order = crowd.cropOrder(Array(faces.indices), readAt: { rereadSchedule.lastReadAt(boxes[$0]) })
        let rolled = hints.filter { $0.roll != nil }
        for index in order where !confirmed.contains(index) {
            let face = faces[index]
            let hint = FaceGeometry.sameFace(face.box, in: rolled, box: { $0.box })?.roll
            guard rereadSchedule.isPaced else {
                faces[index] = try refiner.refine(face, in: frame, startRoll: hint)
                profile.rereads += 1
                rereadSchedule.record(.init(box: faces[index].box, at: now, tracked: hint,
                                            reading: FaceGeometry.withPose(faces[index]).roll, previousReading: nil))
                continue
            }
            let isNew = FaceGeometry.sameFace(face.box, in: hints, box: { $0.box }) == nil
            switch rereadSchedule.decide(face.box, tracked: hint, isNew: isNew, now: now) {
            case .notDue, .newFaceWaits:
                // Read a moment ago (its reading carried), or new to the
                // tracker past those read at once: boxed now, read upright on the next pass.
                unrefined.insert(index)
            case .due(let last, let interval):
                guard crowd.takeCrop() else {
                    // A crowd's budget is spent: its last reading stands (none: none yet).
                    unrefined.insert(index)
                    rereadSchedule.carry(last, to: face.box)
                    continue
                }
                // One crop turned by the tracked roll; for a face new to
                // the tracker by its first-pass roll (one or two forward
                // passes, not the full search's up to six per start), so
                // the pass that finds new faces (a cut, a person walking
                // in) reports them at once.
                rereadSchedule.reading(isNew: isNew)
                // The first-pass roll of a face found on a turned frame leans
                // towards that turn: its crop starts there (a head tilted like
                // the turn, which is why that pass found it, is read from near
                // its tilt), and upright is read too when that crop scores low
                // (an upright face the turned pass happened to find).
                let landmarkRoll = FaceGeometry.withPose(face).roll ?? 0
                let first = index >= turnedFrom ? 0 : landmarkRoll
                // A tracked face not read yet (reported before its reading)
                // starts from the landmarks of the pass that found it: a
                // turned fine pass sees a tilted face's roll where this
                // upright pass reads it short (its landmarks put a 48-pixel
                // face at 35° near 3°, where its crop read it, and its
                // track went upright and lost it).
                let unread = hint == nil && !isNew
                    ? FaceGeometry.sameFace(face.box, in: hints, box: { $0.box }).flatMap { FaceGeometry.withPose($0).roll }
                    : nil
                faces[index] = try readLive(face, in: frame, start: hint ?? unread ?? landmarkRoll, otherwise: first,
                                            side: crowd.cropSide(for: face))
                profile.rereads += 1
                rereadSchedule.record(.init(box: faces[index].box, at: now, tracked: hint,
                                            reading: FaceGeometry.withPose(faces[index]).roll,
                                            previousReading: hint == nil ? nil : last?.reading,
                                            waited: interval ?? rereadSchedule.everySeconds))
            }
        }
    }

    /// `faces` without the new ones `refusedEdgeFaces` skips (not read, not
    /// checked, not reported by this pass), and where the turned ones start among them.
    private func leavingOutRefusedAtEdge(_ faces: [FaceObservation], turnedFrom: Int, hints: [FaceObservation],
                                         frame: ImageBuffer, now: Double) -> ([FaceObservation], Int) {
        var kept: [FaceObservation] = []
        var keptTurnedFrom = Int.max
        for (index, face) in faces.enumerated() {
            let isNew = FaceGeometry.sameFace(face.box, in: hints, box: { $0.box }) == nil
            if isNew, refusedEdgeFaces.skips(face.box, width: frame.width, height: frame.height, at: now) { continue }
            if index >= turnedFrom { keptTurnedFrom = min(keptTurnedFrom, kept.count) }
            kept.append(face)
        }
        return (kept, keptTurnedFrom)
    }

    /// The faces the person check keeps: those tracked already, and the new
    /// ones `personCheckSchedule` has checked that it takes for a person's.
    private func checkPersons(_ faces: [FaceObservation], hints: [FaceObservation], in frame: ImageBuffer, now: Double,
                              gray: () throws -> ImageBuffer, check: PersonFaceCheck,
                              profile: inout FacePassProfile) throws -> [FaceObservation] {
        let start = MonotonicClock.nanos()
        defer { profile.personCheckSeconds = Self.seconds(since: start) }
        var kept: [FaceObservation] = []
        for (face, verdict) in zip(faces, personCheckSchedule.plan(faces, hints: hints)) {
            switch verdict {
            case .tracked:
                kept.append(face)
            case .leftOut:
                break
            case .check:
                profile.personChecks += 1
                if try check.isPerson(face, gray: gray(), profile: &profile) {
                    kept.append(face)
                } else {
                    profile.refused += 1
                    refusedEdgeFaces.refused(face.box, width: frame.width, height: frame.height, at: now)
                }
            }
        }
        return kept
    }

    private static func seconds(since start: UInt64) -> Double {
        Double(MonotonicClock.nanos() - start) / 1e9
    }

    /// A second detector on the same model for the frame of a cut
    /// (FaceStage): the usual 320 pass alone, no second landmark pass, no
    /// attributes (about 6 ms), and the person check of its four largest
    /// faces only (about 3 ms each; the rest wait for the full pass), so the
    /// large faces of a new picture are boxed on its first frame while this
    /// one's full pass runs beside the pipeline.
    public func cutFrameDetector() throws -> YuNetDetector {
        var lite = Options()
        lite.scoreThreshold = options.scoreThreshold
        lite.nmsThreshold = options.nmsThreshold
        lite.regionOfInterest = options.regionOfInterest
        lite.runtime = options.runtime
        lite.attributes = nil
        lite.personChecksPerPass = Self.cutFramePersonChecks
        return try YuNetDetector(modelPath: modelPath, options: lite)
    }

    /// One live crop reading (`LandmarkRefiner.readFromTrack`) turned by
    /// `start`. A small face's reading leans towards the crop's own turn, so
    /// a wrong start (a tracked roll gone astray, or the first-pass roll of a
    /// face found on a turned frame) can hold, and with the track's rate run
    /// away (seen on the pan video: upright faces of about 40 pixels tracked
    /// to -90° within a second). Such a crop scores low, so when the network
    /// scores it under `doubtfulCropScore` and `otherwise` (the frame-wide
    /// pass's roll, or upright for a face found on a turned frame) is more
    /// than `startDoubt` degrees away, a crop turned by that is read too, and
    /// the one the network scores higher wins.
    func readLive(_ face: FaceObservation, in frame: ImageBuffer, start: Double, otherwise: Double,
                  side: Int? = nil) throws -> FaceObservation {
        var best = try refiner.readFromTrack(face, in: frame, trackedRoll: start, side: side)
        if (best?.cropScore ?? 0) < Self.doubtfulCropScore,
           abs(FaceGeometry.normalizedDegrees(otherwise - start)) > Self.startDoubt,
           let second = try refiner.readFromTrack(face, in: frame, trackedRoll: otherwise, side: side),
           second.cropScore > best?.cropScore ?? 0 {
            best = second
        }
        guard var read = best?.face else { return face }
        read.score = face.score
        return read
    }

    /// A well-turned crop of a face scores about 0.92 or more; the runaway
    /// crops above scored 0.5-0.7.
    static let doubtfulCropScore = 0.85
    static let startDoubt = 12.0

    /// The region of interest in frame pixels (the whole frame without one).
    private func searchRegion(_ frame: ImageBuffer) -> PixelRect<Int>? {
        guard frame.channels == 3 else { return nil }
        guard let roi = options.regionOfInterest else { return PixelRect(x: 0, y: 0, w: frame.width, h: frame.height) }
        return roi.pixelRegion(width: frame.width, height: frame.height)
    }

    /// The pass's smaller copy, when `frame` is the pass's frame and the copy
    /// of `region` is at least `side` pixels on its long side (the letterbox
    /// would shrink the frame below the copy's scale anyway): the copy, the
    /// region in it and the factor back to frame pixels.
    private func smallerCopy(of frame: ImageBuffer, region: PixelRect<Int>, side: Int)
        -> (image: ImageBuffer, region: PixelRect<Int>, toFrame: Double)? {
        guard let frameWide, frameWide.frame === frame else { return nil }
        let small = frameWide.smaller
        let factor = Double(small.width) / Double(frame.width)
        let x0 = max(0, Int((Double(region.x) * factor).rounded()))
        let y0 = max(0, Int((Double(region.y) * factor).rounded()))
        let x1 = min(small.width, Int((Double(region.x + region.w) * factor).rounded()))
        let y1 = min(small.height, Int((Double(region.y + region.h) * factor).rounded()))
        guard x1 > x0, y1 > y0, max(x1 - x0, y1 - y0) >= side else { return nil }
        return (small, PixelRect(x: x0, y: y0, w: x1 - x0, h: y1 - y0), 1 / factor)
    }

    /// One letterboxed pass over the region, in frame pixels, after NMS: on
    /// the pass's smaller copy where it serves (`smallerCopy`).
    private func detectOnce(_ frame: ImageBuffer, region: PixelRect<Int>,
                            limit: Int, inputSize: Int) throws -> [FaceObservation] {
        if let copy = smallerCopy(of: frame, region: region, side: inputSize) {
            let back = AffineTransform(a: copy.toFrame, b: 0, c: 0, d: 0, e: copy.toFrame, f: 0)
            return try detectOnce(copy.image, region: copy.region, limit: limit, inputSize: inputSize)
                .map { back.apply(to: $0) }
        }
        let letterbox = Letterbox(regionX: region.x, regionY: region.y, regionWidth: region.w,
                                  regionHeight: region.h, inputSize: inputSize)
        let shape = [letterbox.inputWidth, letterbox.inputHeight]
        let input = inputs[shape] ?? ImageBuffer(width: shape[0], height: shape[1], channels: 3)
        inputs[shape] = input
        try letterbox.fill(input, from: frame)
        let raw = try network.run(input, scoreThreshold: options.scoreThreshold)
        let faces = FaceGeometry.suppressed(raw, iouThreshold: options.nmsThreshold, limit: limit)
        return faces.map { letterbox.toFrame.apply(to: $0) }
    }

    /// Passes on turned copies of the frame until one finds faces; the faces
    /// are turned back, and those whose centre falls outside the region dropped.
    /// A frame larger than the input is shrunk to the input's scale first and
    /// the small copy turned (the pass would shrink the turned frame to that
    /// scale anyway): turning a 1080p frame took about 15 ms, its 640x360
    /// copy under 1.
    private func detectTurned(_ frame: ImageBuffer, region: PixelRect<Int>,
                              limit: Int, inputSize: Int, angles: [Double]) throws -> [FaceObservation] {
        let factor = Double(inputSize) / Double(max(frame.width, frame.height))
        // The pass's smaller copy when it is at least that size: it is shrunk from instead.
        let source = smallerCopy(of: frame, region: PixelRect(x: 0, y: 0, w: frame.width, h: frame.height),
                                 side: inputSize)?.image ?? frame
        let small = factor < 1
            ? try ImageOps.scaledDown(source, width: max(1, Int((Double(frame.width) * factor).rounded())),
                                      height: max(1, Int((Double(frame.height) * factor).rounded())))
            : frame
        let centre = PixelPoint(x: Double(frame.width) / 2, y: Double(frame.height) / 2)
        let smallCentre = PixelPoint(x: Double(small.width) / 2, y: Double(small.height) / 2)
        for angle in angles {
            let turned = try ImageOps.rotated(small, clockwiseDegrees: angle)
            let whole = PixelRect(x: 0, y: 0, w: small.width, h: small.height)
            let back = AffineTransform.rotation(about: smallCentre, clockwiseDegrees: -angle,
                                                scale: Double(frame.width) / Double(small.width), to: centre)
            let faces = try detectOnce(turned, region: whole, limit: limit, inputSize: inputSize)
                .map { back.apply(to: $0) }
                .filter { region.contains($0.box.centre) }
            if !faces.isEmpty { return faces }
        }
        return []
    }
}

