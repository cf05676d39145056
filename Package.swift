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
        // The layers, each a target, so the compiler keeps them apart: the
        // support everything uses (clock, threads, files); vision (images,
        // template matching, faces) on top of it; the pipeline (capture,
        // stages, sinks, H.264, stats) on top of those; the HTTP/WebSocket
        // server (with auth and TLS) on top of the pipeline; events, their
        // clips, recordings and MQTT on top of the server (their APIs are
        // routes); and the core (relays, templates' API, the config, the
        // cameras' assembly and their API) on top of them all.
        .target(
            name: "SightlineSupport",
            dependencies: ["CMalloc"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .target(
            name: "SightlineVision",
            dependencies: [
                "SightlineSupport", "CSightlineOpenCV", "CTurboJPEG", "CPNG", "CZlib",
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
                "SightlineSupport", "SightlineVision", "SightlinePipeline", "CSightlineLWS", "CSightlineTLS", "CZlib",
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
                "SightlineSupport", "SightlineVision", "SightlinePipeline", "SightlineHTTP", "SightlineEvents",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "sightline",
            dependencies: [
                "SightlineCore", "SightlineEvents", "SightlineHTTP", "SightlinePipeline", "SightlineVision", "SightlineSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .testTarget(
            name: "SightlineCoreTests",
            dependencies: ["SightlineCore", "SightlineEvents", "SightlineHTTP", "SightlinePipeline", "SightlineVision", "SightlineSupport", "CZlib"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)

// libFuzzer targets (Tests/Fuzz), only when SIGHTLINE_FUZZ is set: `make fuzz`
// builds them with -sanitize=fuzzer,address, and libFuzzer brings main().
if ProcessInfo.processInfo.environment["SIGHTLINE_FUZZ"] != nil {
    for name in ["FuzzRouting", "FuzzUpload", "FuzzForms"] {
        package.targets.append(.executableTarget(
            name: name,
            dependencies: ["SightlineCore", "SightlineEvents", "SightlineHTTP", "SightlinePipeline", "SightlineVision", "SightlineSupport", .product(name: "Logging", package: "swift-log")],
            path: "Tests/Fuzz/\(name)",
            swiftSettings: [.swiftLanguageMode(.v5), .unsafeFlags(["-parse-as-library"])]
        ))
    }
}
