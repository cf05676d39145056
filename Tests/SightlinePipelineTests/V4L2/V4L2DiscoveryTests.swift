import Foundation
import Testing
@testable import SightlinePipeline

@Suite struct V4L2DiscoveryTests {
    @Test func listsOnlyNodesThatCapture() {
        let camera = FakeV4L2Device(path: "/dev/video0", card: "HD Webcam",
                                    modes: [.init(fourCC: .yuyv, width: 64, height: 48)])
        let metadata = FakeV4L2Device(path: "/dev/video1", card: "HD Webcam",
                                      modes: [.init(fourCC: .yuyv, width: 64, height: 48)])
        metadata.capabilities.deviceCaps = 0x0080_0000 | 0x0400_0000  // META_CAPTURE | STREAMING
        let unplugged = FakeV4L2Device(path: "/dev/video2", modes: [.init(fourCC: .yuyv, width: 64, height: 48)])
        unplugged.unplug()
        let second = FakeV4L2Device(path: "/dev/video4", card: "USB Capture",
                                    modes: [.init(fourCC: .mjpeg, width: 64, height: 48)])
        let devices = [camera, metadata, unplugged, second]

        let found = V4L2Discovery.captureDevices(paths: devices.map(\.path)) { path in
            guard let device = devices.first(where: { $0.path == path }) else {
                throw V4L2Error(operation: "open", code: ENOENT)
            }
            try device.open(path: path)
            return device
        }

        #expect(found.map(\.path) == ["/dev/video0", "/dev/video4"])
        #expect(found.map(\.card) == ["HD Webcam", "USB Capture"])
        #expect(devices.allSatisfy { !$0.isOpen })
    }

    @Test func videoNodesAreSortedByNumber() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("sightline-v4l2-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for name in ["video10", "video2", "video0", "vbi0", "videofoo", "media0"] {
            _ = FileManager.default.createFile(atPath: directory.appendingPathComponent(name).path, contents: nil)
        }
        #expect(V4L2Discovery.videoNodes(in: directory.path).map { ($0 as NSString).lastPathComponent }
                == ["video0", "video2", "video10"])
    }

    @Test func thisMachinesDevicesAllAnswerAsCaptureDevices() {
        // No camera here: the list is empty. On a machine with one, every entry must be a /dev/video node.
        for device in V4L2Discovery.captureDevices() {
            #expect(device.path.hasPrefix("/dev/video"))
        }
    }
}
