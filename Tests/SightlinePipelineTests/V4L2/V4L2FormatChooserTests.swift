import Testing
@testable import SightlinePipeline

@Suite struct V4L2FormatChooserTests {
    typealias Mode = V4L2FormatChooser.Mode

    static func size(_ width: Int, _ height: Int) -> V4L2Size { V4L2Size(width: width, height: height) }

    @Test func prefersYUYVWhenItMeetsTheRequest() {
        let modes = [Mode(fourCC: .mjpeg, size: Self.size(640, 480), maxFPS: 30),
                     Mode(fourCC: .yuyv, size: Self.size(640, 480), maxFPS: 30)]
        #expect(V4L2FormatChooser.choose(from: modes, size: Self.size(640, 480), fps: 30)?.fourCC == .yuyv)
    }

    @Test func takesMJPEGWhenYUYVIsTooSlowAtThatSize() {
        let modes = [Mode(fourCC: .yuyv, size: Self.size(1280, 720), maxFPS: 10),
                     Mode(fourCC: .mjpeg, size: Self.size(1280, 720), maxFPS: 30)]
        #expect(V4L2FormatChooser.choose(from: modes, size: Self.size(1280, 720), fps: 30)?.fourCC == .mjpeg)
    }

    @Test func sizeComesBeforeFrameRate() {
        let modes = [Mode(fourCC: .yuyv, size: Self.size(640, 480), maxFPS: 30),
                     Mode(fourCC: .yuyv, size: Self.size(1280, 720), maxFPS: 10)]
        let chosen = V4L2FormatChooser.choose(from: modes, size: Self.size(1280, 720), fps: 30)
        #expect(chosen?.size == Self.size(1280, 720))
    }

    @Test func nearestSizeByRatio() {
        let modes = [Self.size(320, 240), Self.size(800, 600), Self.size(1920, 1080)]
            .map { Mode(fourCC: .yuyv, size: $0) }
        #expect(V4L2FormatChooser.choose(from: modes, size: Self.size(640, 480), fps: 30)?.size == Self.size(800, 600))
        #expect(V4L2FormatChooser.choose(from: modes, size: Self.size(352, 288), fps: 30)?.size == Self.size(320, 240))
    }

    @Test func ignoresFormatsItCannotRead() {
        let nv12 = Mode(fourCC: V4L2FourCC("NV12"), size: Self.size(640, 480), maxFPS: 30)
        #expect(V4L2FormatChooser.choose(from: [nv12], size: Self.size(640, 480), fps: 30) == nil)
        let bgr = Mode(fourCC: .bgr24, size: Self.size(320, 240), maxFPS: 30)
        #expect(V4L2FormatChooser.choose(from: [nv12, bgr], size: Self.size(640, 480), fps: 30) == bgr)
    }

    @Test func stepwiseSizesSnapToTheStepInsideTheRange() {
        let sizes = V4L2FrameSizes.stepwise(min: Self.size(16, 16), max: Self.size(1024, 768), step: Self.size(16, 8))
        #expect(sizes.candidates(near: Self.size(650, 485)) == [Self.size(640, 480)])
        #expect(sizes.candidates(near: Self.size(1920, 1080)) == [Self.size(1024, 768)])
        #expect(sizes.candidates(near: Self.size(4, 4)) == [Self.size(16, 16)])
    }

    @Test func frameIntervalsAndFractions() {
        #expect(V4L2Fraction(fps: 30) == V4L2Fraction(numerator: 1, denominator: 30))
        #expect(V4L2Fraction(fps: 29.97) == V4L2Fraction(numerator: 1000, denominator: 29970))
        #expect(V4L2Fraction(numerator: 1, denominator: 0).fps == nil)
        let discrete = V4L2FrameIntervals.discrete([V4L2Fraction(fps: 15), V4L2Fraction(fps: 30), V4L2Fraction(fps: 5)])
        #expect(discrete.maxFPS == 30)
        let stepwise = V4L2FrameIntervals.stepwise(min: V4L2Fraction(numerator: 1, denominator: 60),
                                                   max: V4L2Fraction(numerator: 1, denominator: 1))
        #expect(stepwise.maxFPS == 60)
    }
}
