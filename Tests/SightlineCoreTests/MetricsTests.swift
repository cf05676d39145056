import Testing
@testable import SightlineSupport
@testable import SightlinePipeline
@testable import SightlineHTTP
@testable import SightlineCore

@Suite struct MetricsTests {
    @Test func histogramQuantilesAreWithinOneBucket() {
        var histogram = LatencyHistogram()
        for ms in 1...100 { histogram.record(seconds: Double(ms) / 1000) }
        let p50 = histogram.quantile(0.5)!
        let p99 = histogram.quantile(0.99)!
        #expect(abs(p50 - 0.050) / 0.050 < 0.05)
        #expect(abs(p99 - 0.099) / 0.099 < 0.05)
        #expect(histogram.count == 100)
        #expect(histogram.count(atOrBelow: 0.010) >= 9 && histogram.count(atOrBelow: 0.010) <= 11)
    }

    @Test func emptyHistogramHasNoQuantile() {
        #expect(LatencyHistogram().quantile(0.5) == nil)
    }

    @Test func rateMeterReadsEventsPerSecond() {
        var meter = RateMeter(window: 2)
        let start: UInt64 = 10_000_000_000
        for i in 0..<61 { meter.tick(at: start + UInt64(i) * 33_333_333) }  // 30 fps for 2 s
        let rate = meter.rate(now: start + 60 * 33_333_333)
        #expect(abs(rate - 30) < 1)
        // Two seconds of silence later, the rate has fallen to nothing.
        #expect(meter.rate(now: start + 60 * 33_333_333 + 2_500_000_000) == 0)
    }

    @Test func statsCountDropsAndSends() {
        let stats = PipelineStats()
        stats.frameDropped(.superseded)
        stats.frameDropped(.late, count: 2)
        stats.frameSent(seq: 5, bytes: 100, latencySeconds: 0.01)
        stats.frameSent(seq: 5, bytes: 100, latencySeconds: 0.02)   // second client, same frame
        stats.frameSent(seq: 6, bytes: 100, latencySeconds: 0.01)
        stats.clientSkipped(3)
        let snapshot = stats.snapshot()
        #expect(snapshot.drops[.superseded] == 1)
        #expect(snapshot.drops[.late] == 2)
        #expect(snapshot.sent == 2)
        #expect(snapshot.bytesSent == 300)
        #expect(snapshot.clientSkips == 3)
        #expect(snapshot.captureToSend.count == 3)
    }

    @Test func prometheusTextIsWellFormed() {
        let stats = PipelineStats()
        let video = VideoStats()
        let metrics = ServerMetrics(server: ServerStats(), startedAt: MonotonicClock.nanos())
        metrics.attach(camera: "front", stats: stats, video: video)
        stats.frameCaptured()
        stats.stage(.template, seconds: 0.012)
        stats.clients(.webSocket, change: 1)
        stats.clients(.webSocket, change: 1)
        stats.clients(.mjpeg, change: 1)
        var front = CameraReading(name: "front", stats: stats.snapshot(), status: SourceStatus(spec: "demo", name: "demo", state: .live))
        front.templates = 1
        front.sinks = ["stream": SinkCounts(delivered: 4, consumed: 4, skipped: 1)]
        // A name the text format must escape: the library does.
        let odd = CameraReading(name: "a\"b", stats: PipelineStats().snapshot(), status: SourceStatus(spec: "demo", name: "demo", state: .live))
        let text = metrics.page([front, odd])
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let value = line.split(separator: " ").last!
            #expect(Double(value) != nil, "bad value: \(line)")
            #expect(line.contains("camera=\"") || line.hasPrefix("sightline_connections_") || line.hasPrefix("sightline_requests_")
                    || line.hasPrefix("sightline_uptime_seconds "), "no camera label: \(line)")
        }
        #expect(text.contains("sightline_frames_captured_total{camera=\"front\"} 1\n"))
        #expect(text.contains("sightline_frames_captured_total{camera=\"a\\\"b\"} 0\n"), "\(text)")
        #expect(text.contains("sightline_sink_frames_skipped_total{camera=\"front\",sink=\"stream\"} 1\n"))
        #expect(text.contains("sightline_stage_seconds_bucket{camera=\"front\",stage=\"template\",le=\"0.015\"} 1\n"))
        #expect(text.contains("sightline_stage_seconds_bucket{camera=\"front\",stage=\"template\",le=\"0.01\"} 0\n"))
        #expect(text.contains("sightline_clients{camera=\"front\",kind=\"ws\"} 2.0\n"))
        #expect(text.contains("sightline_clients{camera=\"front\",kind=\"mjpeg\"} 1.0\n"))
        #expect(text.contains("sightline_connections_refused_total 0\n"))
        #expect(text.components(separatedBy: "# TYPE sightline_stage_seconds histogram").count == 2)

        // One camera's page: its series and the server's.
        let own = metrics.page(camera: front)
        #expect(own.contains("sightline_stage_seconds_count{camera=\"front\",stage=\"template\"} 1\n"))
        #expect(own.contains("sightline_uptime_seconds ") && !own.contains("a\\\"b"))

        // A camera detached: nothing of it stays.
        metrics.detach(camera: "front", stats: stats, video: video)
        stats.stage(.template, seconds: 0.012)
        #expect(!metrics.page([]).contains("front"))
        #expect(metrics.page([]).contains("sightline_uptime_seconds "))
    }
}
