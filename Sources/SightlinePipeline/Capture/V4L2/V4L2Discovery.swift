import Foundation

/// Finds V4L2 capture devices: the `/dev/video*` nodes whose QUERYCAP says
/// video capture with streaming (a UVC camera's metadata node does not).
/// For the `auto` source and for listing sources. Runs on any thread; it
/// opens its own descriptors and closes them before returning.
public enum V4L2Discovery {
    /// Capture devices under /dev, in node-number order.
    public static func captureDevices() -> [(path: String, card: String)] {
        captureDevices(paths: videoNodes(in: "/dev")) { path in
            let device = LinuxV4L2Device()
            try device.open(path: path)
            return device
        }
    }

    /// The capture devices among `paths`; `openDevice` opens one path (tests pass fakes).
    public static func captureDevices(paths: [String],
                                      openDevice: (String) throws -> any V4L2Device) -> [(path: String, card: String)] {
        paths.compactMap { path in
            guard let device = try? openDevice(path) else { return nil }
            defer { device.close() }
            guard let capabilities = try? device.queryCapabilities(),
                  capabilities.canCapture, capabilities.canStream else { return nil }
            return (path, capabilities.card)
        }
    }

    /// `video<N>` entries of a directory as full paths, sorted by N.
    static func videoNodes(in directory: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.compactMap { name -> (Int, String)? in
            guard name.hasPrefix("video"), let number = Int(name.dropFirst("video".count)) else { return nil }
            return (number, directory + "/" + name)
        }
        .sorted { $0.0 < $1.0 }
        .map(\.1)
    }
}
