// swift-tools-version:6.0
import Foundation
import PackageDescription

// OpenCV 4.6 from Debian (libopencv-dev). Its headers are C++, so only the
// CSightlineOpenCV shim reads them; Swift sees a C header. imgcodecs (and
// the libraries it brings: GDAL, poppler, OpenEXR...) is only in
// libSightlineMedia.so, which that shim loads when an unusual image format
// needs it. Video files and stream URLs do not: CSightlineAV reads them with
// FFmpeg, which the server links anyway.
let openCVLibraries = [
    "opencv_core", "opencv_imgproc", "opencv_face", "opencv_dnn", "opencv_objdetect", "opencv_video",
].map { LinkerSetting.linkedLibrary($0) }
let openCVMediaLibraries = ["opencv_core", "opencv_imgproc", "opencv_imgcodecs"]
    .map { LinkerSetting.linkedLibrary($0) }

// The test targets compile without optimization even in the release build that make test
// makes (the code they test is optimized): their -O whole-module passes were a third of the
// build's time, and a test's own code only calls into the libraries.
let testSettings: [SwiftSetting] = [.swiftLanguageMode(.v6), .unsafeFlags(["-Onone"])]

let package = Package(
    name: "Sightline",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "sightline", targets: ["sightline"]),
        .library(name: "SightlineMedia", type: .dynamic, targets: ["CSightlineMedia"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "5.0.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        .target(
            name: "CSightlineOpenCV",
            cxxSettings: [.unsafeFlags(["-I/usr/include/opencv4"])],
            // dlib from Debian (libdlib-dev) for the 68-point shape predictor
            // (ShapeShim.cpp, the only file that reads its headers); its
            // matrix code calls BLAS and LAPACK (libblas-dev, liblapack-dev).
            linkerSettings: openCVLibraries + [.linkedLibrary("dlib"), .linkedLibrary("blas"), .linkedLibrary("lapack"),
                                               .linkedLibrary("stdc++"), .linkedLibrary("dl")]
        ),
        .target(
            name: "CSightlineMedia",
            cxxSettings: [.unsafeFlags(["-I/usr/include/opencv4", "-I\(Context.packageDirectory)/Sources/CSightlineOpenCV",
                                        "-I\(Context.packageDirectory)/Sources/CSightlineOpenCV/include"])],
            linkerSettings: openCVMediaLibraries + [.linkedLibrary("stdc++")]
        ),
        .target(
            name: "CSightlineLWS",
            linkerSettings: [.linkedLibrary("websockets")]
        ),
        .systemLibrary(name: "CTurboJPEG", pkgConfig: "libturbojpeg",
                       providers: [.apt(["libturbojpeg0-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CPNG", pkgConfig: "libpng", providers: [.apt(["libpng-dev"])]),
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd",
                       providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(name: "CMalloc"),
        .target(
            name: "CSightlineV4L2",
            linkerSettings: [.linkedLibrary("v4l2")]
        ),
        // libmosquitto from Debian (libmosquitto-dev): its C API imports as it is;
        // the shim adds only the wake-up and the wait Swift cannot do beside it.
        .target(
            name: "CSightlineMQTT",
            linkerSettings: [.linkedLibrary("mosquitto")]
        ),
        // OpenSSL's libcrypto from Debian (libssl-dev), which libwebsockets links
        // already: the self-signed certificate, reading certificates and keys,
        // SHA-256. Swift sees only the shim's header, not OpenSSL's.
        .target(
            name: "CSightlineTLS",
            linkerSettings: [.linkedLibrary("crypto")]
        ),
        // FFmpeg 5.1 from Debian (libavcodec-dev, libavformat-dev, libswscale-dev,
        // libavutil-dev): H.264 through libx264 and back through libavcodec's
        // decoder, the muxer for relays and clips, and the reader of video files
        // and stream URLs, behind a C shim with opaque handles.
        .target(
            name: "CSightlineAV",
            linkerSettings: [.linkedLibrary("avformat"), .linkedLibrary("avcodec"), .linkedLibrary("swscale"), .linkedLibrary("avutil")]
        ),
        // ONNX Runtime's C API for the YuNet face network, opened with dlopen when
        // installed (PyPI's onnxruntime wheel; scripts/setup.sh), else faces run
        // on OpenCV's dnn: no link-time dependency.
        .target(
            name: "CSightlineONNX",
            linkerSettings: [.linkedLibrary("dl")]
        ),
        // The layers, each a target, so the compiler keeps them apart: the
        // support everything uses (clock, threads, files); vision (images,
        // template matching, faces) on top of it; the pipeline (capture,
        // stages, sinks, H.264, stats) on top of those; the HTTP/WebSocket
        // server (requests, answers, connections, auth and TLS), which knows
        // nothing of frames, on support alone; streaming (the cameras' feeds
        // to `/ws` and MJPEG viewers, the H.264 and MSE viewers' pacing) joins
        // the pipeline to the server; events, their clips, recordings and MQTT
        // on the pipeline; and the core (the routes with the events' and
        // recordings' APIs, relays, templates' API, the config, the cameras'
        // assembly and their API) on top of them all.
        // scripts/check-layers.py fails `make test` when a file imports a layer its target must not.
        .target(
            name: "SightlineSupport",
            dependencies: ["CMalloc"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .target(
            name: "SightlineVision",
            dependencies: [
                "SightlineSupport", "CSightlineOpenCV", "CSightlineONNX", "CTurboJPEG", "CPNG", "CZlib",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .target(
            name: "SightlinePipeline",
            dependencies: [
                "SightlineSupport", "SightlineVision",
                "CSightlineOpenCV", "CSightlineV4L2", "CSightlineAV", "CSystemd",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .target(
            name: "SightlineHTTP",
            dependencies: [
                "SightlineSupport", "CSightlineLWS", "CSightlineTLS", "CZlib",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .target(
            name: "SightlineStreaming",
            dependencies: [
                "SightlineSupport", "SightlineVision", "SightlinePipeline", "SightlineHTTP",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .target(
            name: "SightlineEvents",
            dependencies: [
                "SightlineSupport", "SightlineVision", "SightlinePipeline", "CSightlineMQTT",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .target(
            name: "SightlineCore",
            dependencies: [
                "SightlineSupport", "SightlineVision", "SightlinePipeline", "SightlineHTTP", "SightlineStreaming", "SightlineEvents",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "sightline",
            dependencies: [
                "SightlineCore", "SightlineEvents", "SightlineStreaming", "SightlineHTTP", "SightlinePipeline", "SightlineVision", "SightlineSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // What the tests share: a clock they move by hand, the shared data's
        // paths, waiting for another thread, frames, sources and faces to test
        // with. Below the server, so a vision or pipeline test builds without it.
        .target(
            name: "SightlineTesting",
            dependencies: ["SightlineSupport", "SightlineVision", "SightlinePipeline",
                           .product(name: "Logging", package: "swift-log")],
            path: "Tests/SightlineTesting",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // Builders for the server's tests (an access guard with a known token).
        .target(
            name: "SightlineHTTPTesting",
            dependencies: ["SightlineHTTP"],
            path: "Tests/SightlineHTTPTesting",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // Builders for the events' tests and theirs above (event records, tracker frames).
        .target(
            name: "SightlineEventsTesting",
            dependencies: ["SightlineEvents", "SightlineVision", "SightlinePipeline"],
            path: "Tests/SightlineEventsTesting",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // One test target per layer, each with the layers below it only.
        .testTarget(
            name: "SightlineSupportTests",
            dependencies: ["SightlineSupport", "SightlineTesting"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "SightlineVisionTests",
            dependencies: ["SightlineVision", "SightlineSupport", "SightlineTesting", "CZlib", .product(name: "Logging", package: "swift-log")],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "SightlinePipelineTests",
            dependencies: ["SightlinePipeline", "SightlineVision", "SightlineSupport", "SightlineTesting", "CSightlineV4L2", "CTurboJPEG",
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "SightlineHTTPTests",
            dependencies: ["SightlineHTTP", "SightlineSupport", "SightlineTesting", "SightlineHTTPTesting"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "SightlineStreamingTests",
            dependencies: ["SightlineStreaming", "SightlineHTTP", "SightlinePipeline", "SightlineVision", "SightlineSupport",
                           "SightlineTesting", "SightlineHTTPTesting", .product(name: "Logging", package: "swift-log")],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "SightlineEventsTests",
            dependencies: ["SightlineEvents", "SightlinePipeline", "SightlineVision", "SightlineSupport", "SightlineTesting",
                           "SightlineEventsTesting", .product(name: "Logging", package: "swift-log")],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "SightlineCoreTests",
            dependencies: ["SightlineCore", "SightlineEvents", "SightlineStreaming", "SightlineHTTP", "SightlinePipeline",
                           "SightlineVision", "SightlineSupport", "SightlineTesting", "SightlineHTTPTesting", "SightlineEventsTesting",
                           .product(name: "Logging", package: "swift-log")],
            swiftSettings: testSettings
        ),
    ]
)

// libFuzzer targets (Tests/Fuzz), only when SIGHTLINE_FUZZ is set: `make fuzz`
// builds them with -sanitize=fuzzer,address, and libFuzzer brings main().
if ProcessInfo.processInfo.environment["SIGHTLINE_FUZZ"] != nil {
    for name in ["FuzzRouting", "FuzzUpload", "FuzzForms"] {
        package.targets.append(.executableTarget(
            name: name,
            dependencies: ["SightlineCore", "SightlineEvents", "SightlineStreaming", "SightlineHTTP", "SightlinePipeline", "SightlineVision", "SightlineSupport", .product(name: "Logging", package: "swift-log")],
            path: "Tests/Fuzz/\(name)",
            swiftSettings: [.swiftLanguageMode(.v5), .unsafeFlags(["-parse-as-library"])]
        ))
    }
}
