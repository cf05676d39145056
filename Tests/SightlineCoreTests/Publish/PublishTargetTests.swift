import Foundation
import Testing
@testable import SightlineSupport
@testable import SightlinePipeline
@testable import SightlineCore

@Suite("Publish: targets")
struct PublishTargetTests {
    @Test("rtsp:// goes out as RTSP, rtmp:// and rtmps:// as FLV; anything else is refused")
    func formats() throws {
        #expect(try PublishTarget.parse("rtsp://relay.local:8554/cam", environment: [:]).format == "rtsp")
        #expect(try PublishTarget.parse("rtmp://127.0.0.1/live/cam", environment: [:]).format == "flv")
        #expect(try PublishTarget.parse("RTMPS://relay/live/cam", environment: [:]).format == "flv")
        for wrong in ["http://relay/cam", "srt://relay:9000", "relay:1935/live", "rtmp:///live/cam", ""] {
            #expect(throws: ConfigError.self) { try PublishTarget.parse(wrong, environment: [:]) }
        }
    }

    @Test("${NAME} comes from the environment; the shown URL keeps the placeholder and drops user and password")
    func secretsStayHidden() throws {
        let target = try PublishTarget.parse("rtsp://cam:s3cret@relay:8554/live/${KEY}", environment: ["KEY": "abc123"])
        #expect(target.url == "rtsp://cam:s3cret@relay:8554/live/abc123")
        #expect(target.shown == "rtsp://relay:8554/live/${KEY}")
        #expect(!target.shown.contains("s3cret") && !target.shown.contains("abc123"))
        #expect(throws: ConfigError.self) { try PublishTarget.parse("rtmp://relay/live/${MISSING}", environment: [:]) }
        #expect(throws: ConfigError.self) { try PublishTarget.parse("rtmp://relay/live/${OPEN", environment: [:]) }
        let error = #expect(throws: ConfigError.self) {
            try PublishTarget.parse("ftp://user:pw@relay/x", environment: [:])
        }
        #expect(!"\(error!)".contains("pw"))
    }

    @Test("publish: in the config, checked; it needs H.264")
    func config() throws {
        var settings = ServeSettings()
        try settings.apply(SightlineConfig.parse("publish:\n  - rtmp://127.0.0.1:1935/live/cam\n", origin: "x.yaml"))
        #expect(settings.publish == ["rtmp://127.0.0.1:1935/live/cam"])
        try settings.validate()
        settings.video.h264Enabled = false
        #expect(throws: ConfigError.self) { try settings.validate() }
        var bad = ServeSettings()
        try bad.apply(SightlineConfig.parse("publish: [\"udp://x\"]\n", origin: "x.yaml"))
        #expect(throws: ConfigError.self) { try bad.validate() }
    }

    @Test("a keyframe's SPS and PPS, each after a start code, for the muxer's header")
    func parameterSets() {
        let unit = Data([0, 0, 0, 1, 0x09, 0xf0, 0, 0, 1, 0x67, 0x64, 0x00, 0x1f, 0, 0, 0, 1, 0x68, 0xeb,
                         0, 0, 1, 0x06, 0x05, 0x01, 0x80, 0, 0, 0, 1, 0x65, 0x88])
        #expect(AnnexB.parameterSets(of: unit) == Data([0, 0, 0, 1, 0x67, 0x64, 0x00, 0x1f, 0, 0, 0, 1, 0x68, 0xeb]))
    }
}
