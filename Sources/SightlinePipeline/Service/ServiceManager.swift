import CSystemd
import Foundation

/// Talks to a service manager through libsystemd's `sd_notify`: readiness
/// (`Type=notify`), stopping, a status line, and watchdog pings. Without a
/// manager (`NOTIFY_SOCKET` unset) every call does nothing, so the server
/// runs the same by hand.
public enum ServiceManager {
    /// The server is listening and serving.
    public static func ready(status: String) { notify("READY=1\nSTATUS=\(status)") }

    public static func stopping() { notify("STOPPING=1") }

    public static func status(_ text: String) { notify("STATUS=\(text)") }

    /// The watchdog is fed: the server is doing its job.
    static func watchdogPing() { notify("WATCHDOG=1") }

    /// The watchdog interval asked of this process (`WatchdogSec=`), or nil when none is.
    public static var watchdogInterval: Double? {
        var microseconds: UInt64 = 0
        guard sd_watchdog_enabled(0, &microseconds) > 0, microseconds > 0 else { return nil }
        return Double(microseconds) / 1e6
    }

    private static func notify(_ state: String) {
        _ = sd_notify(0, state)
    }
}
