import CSightlineV4L2
import Foundation
import Testing
@testable import SightlinePipeline

/// What can be checked of the real device layer on a machine without a camera.
@Suite struct LinuxV4L2DeviceTests {
    @Test func requestNumbersMatchTheKernelABI() {
        // _IOR('V', 0, struct v4l2_capability): 104-byte struct.
        #expect(SL_VIDIOC_QUERYCAP == 0x8068_5600)
        // _IOWR('V', 17, struct v4l2_buffer): 88 bytes on 64-bit Linux.
        #expect(SL_VIDIOC_DQBUF == (MemoryLayout<Int>.size == 8 ? 0xC058_5611 : 0xC044_5611))
        #expect(SL_VIDIOC_S_FMT & 0xFF == 5 && SL_VIDIOC_STREAMON & 0xFF == 18)
        #expect(MemoryLayout<v4l2_buffer>.size == (MemoryLayout<Int>.size == 8 ? 88 : 68))
    }

    @Test func fourCCsRoundTrip() {
        #expect(V4L2FourCC.yuyv == V4L2FourCC("YUYV"))
        #expect(V4L2FourCC.mjpeg.description == "MJPG")
        #expect(V4L2FourCC.bgr24.description == "BGR3")
        #expect(V4L2FourCC("Y8  ").description == "Y8")
    }

    @Test func openingAMissingNodeThrowsENOENT() {
        let device = LinuxV4L2Device()
        let error = #expect(throws: V4L2Error.self) { try device.open(path: "/dev/sightline-no-such-video") }
        #expect(error?.code == ENOENT)
        device.close()
    }

    @Test func callsOnAClosedDeviceFailWithEBADF() {
        let device = LinuxV4L2Device()
        let error = #expect(throws: V4L2Error.self) { try device.queryCapabilities() }
        #expect(error?.code == EBADF)
        #expect(error?.operation == "VIDIOC_QUERYCAP")
    }

    @Test func realSourceOnAMissingNodeIsCannotOpen() {
        let source = V4L2Source(path: "/dev/sightline-no-such-video")
        let error = #expect(throws: SourceError.self) { try source.open() }
        #expect(error?.kind == "cannotOpen")
        #expect(source.pacing == .device)
        source.close()
    }

    @Test func aFileThatIsNotAVideoNodeIsRefused() {
        let source = V4L2Source(path: "/dev/null")
        let error = #expect(throws: SourceError.self) { try source.open() }
        #expect(error.map { ["cannotOpen", "unsupported"].contains($0.kind) } == true)
        source.close()
    }
}
