import Foundation
import Testing
@testable import SightlineSupport
@testable import SightlineVision
@testable import SightlinePipeline
@testable import SightlineCore
import SightlineTesting

/// The pipeline analyses frames larger than the detection size on a copy
/// scaled down to it (`AnalysisSize`, `ConvertStage`); boxes stay
/// normalized, so they fit the full picture.
@Suite struct AnalysisSizeTests {
    /// The shipped YuNet-320 (the project's own copy: no shared data needed).
    static var shippedModel: String { TestPaths.repository + "/models/face_detection_yunet_2023mar_320.onnx" }

    @Test func sizesOfTheCopy() {
        let size = AnalysisSize()
        #expect(size.longSide == 640)
        #expect(size.scaled(width: 640, height: 480) == nil)
        #expect(size.scaled(width: 480, height: 640) == nil)
        #expect(size.scaled(width: 320, height: 240) == nil)
        #expect(size.scaled(width: 1920, height: 1080)! == (640, 360))
        #expect(size.scaled(width: 1080, height: 1920)! == (360, 640))
        #expect(size.scaled(width: 3840, height: 2160)! == (640, 360))
        #expect(size.scaled(width: 2592, height: 1944)! == (640, 480))
        #expect(AnalysisSize(longSide: 0).scaled(width: 3840, height: 2160) == nil)
    }

    @Test func framesAtOrBelowTheSizeAreAnalysedAsTheyAre() throws {
        for (width, height) in [(640, 480), (480, 640), (320, 240), (640, 360)] {
            let image = ImageBuffer(width: width, height: height)
            var context = FrameContext(frame: Frame(seq: 1, capturedAt: 0, capturedNanos: 0, image: image))
            try ConvertStage(analysisSize: AnalysisSize()).process(&context)
            #expect(context.image === image, "\(width)x\(height) was copied")
            #expect(context.analysisScale == 1)
            #expect(context.gray?.width == width && context.gray?.height == height)
        }
    }

    @Test func aLargerFrameIsAnalysedOnItsCopy() throws {
        let image = ImageBuffer(width: 1920, height: 1080)
        var context = FrameContext(frame: Frame(seq: 1, capturedAt: 0, capturedNanos: 0, image: image))
        try ConvertStage(analysisSize: AnalysisSize()).process(&context)
        #expect(context.image.width == 640 && context.image.height == 360)
        #expect(context.gray?.width == 640 && context.gray?.height == 360 && context.gray?.channels == 1)
        #expect(abs(context.analysisScale - 1.0 / 3) < 1e-9)
        #expect(context.frame.image === image)
    }

    /// A 1920x1080 scene: mid-grey noise, the demo face large (about 200
    /// pixels wide) and small (about 72: 24 on the 640 copy, 12 on a 320 one), and the demo
    /// template twice its size; returns the picture and where each was put.
    static func scene() throws -> (image: ImageBuffer, large: NormalizedBox, small: NormalizedBox, template: NormalizedBox) {
        let canvas = ImageBuffer(width: 1920, height: 1080)
        canvas.bytes.update(repeating: 120, count: canvas.byteCount)
        try ImageOps.addNoise(canvas, seed: 5, sigma: 6)
        let face = try ImageIO.read(path: TestPaths.repository + "/config/demo-face.jpg")
        let templateImage = try ImageIO.read(path: TestPaths.demoTemplate)
        func put(_ image: ImageBuffer, x: Int, y: Int, side: Int) throws -> NormalizedBox {
            try ImageOps.resize(image.cView, into: canvas.cView(x: x, y: y, width: side, height: side), interpolation: .area)
            return NormalizedBox(pixelX: Double(x), pixelY: Double(y), width: Double(side), height: Double(side),
                                 frameWidth: 1920, frameHeight: 1080)
        }
        let large = try put(face, x: 300, y: 300, side: 330)
        let small = try put(face, x: 1000, y: 700, side: 180)
        let template = try put(templateImage, x: 1400, y: 200, side: 192)
        return (canvas, large, small, template)
    }

    /// A face's box from the picture's (the photo's face fills most of it, not all).
    static func contains(_ outer: NormalizedBox, _ box: NormalizedBox) -> Bool {
        let cx = box.x + box.w / 2, cy = box.y + box.h / 2
        return cx > outer.x && cx < outer.x + outer.w && cy > outer.y && cy < outer.y + outer.h
            && box.w < outer.w * 1.2 && box.w > outer.w * 0.3
    }

    /// The stages of `detect` with the given detection size, on one frame.
    static func detections(_ image: ImageBuffer, size: Int, template: Template) throws -> [Detection] {
        let detector = try YuNetDetector(modelPath: shippedModel)
        var matcher = TemplateMatcher.Options()
        matcher.tracking = false
        let stages: [PipelineStage] = [ConvertStage(analysisSize: AnalysisSize(longSide: size)),
                                       StillFaceStage(detector: detector, limit: 10),
                                       TemplateStage(matcher: TemplateMatcher(options: matcher),
                                                     library: TemplateLibrary([template]))]
        var context = FrameContext(frame: Frame(seq: 1, capturedAt: 0, capturedNanos: 0, image: image))
        for stage in stages { try stage.process(&context) }
        return context.detections
    }

    @Test func aFullHDFrameGivesTheBoxesOfItsCopy() throws {
        let (full, large, _, placed) = try Self.scene()
        // The template is cut from the full picture, as a user cuts one.
        let cut = full.cropped(x: 1400, y: 200, width: 192, height: 192).copy()
        let template = try Template(name: "logo", image: cut)
        let onFull = try Self.detections(full, size: 640, template: template)
        // The 640x360 copy, analysed as it is, with the template at its scale.
        let copy = try ImageOps.resized(full, width: 640, height: 360, interpolation: .area)
        let smallTemplate = try Template(name: "logo", image: ImageOps.resized(cut, width: 64, height: 64, interpolation: .area))
        let onCopy = try Self.detections(copy, size: 640, template: smallTemplate)

        let facesFull = onFull.filter { $0.kind == .face }, facesCopy = onCopy.filter { $0.kind == .face }
        #expect(facesFull.count == facesCopy.count)
        #expect(facesFull.contains { Self.contains(large, $0.box) }, "\(facesFull.map(\.box))")
        for face in facesCopy {
            let same = facesFull.max { $0.box.intersectionOverUnion(face.box) < $1.box.intersectionOverUnion(face.box) }
            #expect(same.map { $0.box.intersectionOverUnion(face.box) > 0.95 } == true, "\(face.box) vs \(facesFull.map(\.box))")
        }
        let hit = try #require(onFull.first { $0.kind == .template })
        #expect(hit.box.intersectionOverUnion(placed) >= 0.8, "\(hit.box) vs \(placed)")
        #expect(abs((hit.scale ?? 0) - 1) < 0.05, "scale \(String(describing: hit.scale))")
        let copyHit = try #require(onCopy.first { $0.kind == .template })
        #expect(hit.box.intersectionOverUnion(copyHit.box) > 0.9)
    }

    /// How the size is chosen: the fine pass reads the frame at 640 on its long
    /// side whatever its size, so on the 640 copy it finds the faces it finds on
    /// the full frame; a 320 copy loses the small ones.
    @Test func theSmallFaceIsFoundOnThe640CopyAndLostOnA320One() throws {
        let (full, _, small, _) = try Self.scene()
        let detector = try YuNetDetector(modelPath: Self.shippedModel)
        func faces(at longSide: Int) throws -> [FaceObservation] {
            let image = try AnalysisSize(longSide: longSide).analysed(full)
            return try detector.detect(in: image, gray: nil, limit: 10, hints: [], fine: 0)
                .map { face in
                    var face = face
                    let f = 1920.0 / Double(image.width)
                    face.box = PixelRect(x: face.box.x * f, y: face.box.y * f, w: face.box.w * f, h: face.box.h * f)
                    return face
                }
        }
        func hasSmall(_ found: [FaceObservation]) -> Bool {
            found.contains {
                Self.contains(small, NormalizedBox(pixelX: $0.box.x, pixelY: $0.box.y, width: $0.box.w, height: $0.box.h,
                                                   frameWidth: 1920, frameHeight: 1080))
            }
        }
        let onFull = try faces(at: 0), onCopy = try faces(at: 640)
        #expect(hasSmall(onFull), "the full frame's fine pass misses the small face at \(small): \(onFull.map(\.box))")
        #expect(hasSmall(onCopy), "the 640 copy's fine pass misses the small face at \(small): \(onCopy.map(\.box))")
        #expect(!hasSmall(try faces(at: 320)), "a 320 copy still finds the small face: pick a smaller one for this test")
    }

    @Test func theSettingIsReadAndChecked() throws {
        var settings = ServeSettings()
        #expect(settings.analysisSize == 640)
        let config = try SightlineConfig.parse("analysis:\n  size: 960\n", origin: "test")
        try settings.apply(config)
        #expect(settings.analysisSize == 960)
        settings.analysisSize = 100
        #expect(throws: ConfigError.self) { try settings.validate() }
        settings.analysisSize = 0
        try settings.validate()
        // Per camera: a 4K camera's copy can differ from the others'.
        var server = ServeSettings()
        try server.apply(try SightlineConfig.parse("""
            analysis:
              size: 960
            cameras:
              door:
                source: {spec: demo}
              yard:
                source: {spec: demo}
                analysis:
                  size: 320
            """, origin: "test"))
        #expect(try server.cameraSettings().map(\.analysisSize) == [960, 320])
    }
}
