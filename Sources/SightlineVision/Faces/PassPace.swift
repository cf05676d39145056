/// When a face's paced look (a landmark re-read, a smile and eyes reading, a
/// small face's confirming crop) is due again. Passes come on frame times, a
/// little early or late, so a look due within a fifth of its interval counts
/// as due: otherwise a pass just early would put it off by a whole interval.
enum PassPace {
    static func isDue(lastAt: Double, now: Double, every seconds: Double) -> Bool {
        now - lastAt >= seconds * 0.8
    }
}
