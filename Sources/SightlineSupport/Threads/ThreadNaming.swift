import Foundation

extension Thread {
    /// Called first thing on a new thread: gives the OS the thread's
    /// name without its `sightline.` prefix (Linux keeps 15 bytes), so
    /// `top -H`, `/proc/PID/task/*/comm` and `scripts/loadtest.py` show
    /// which part uses the CPU: `pipeline`, `lws`, `sink.h264`, ...
    /// Foundation on Linux keeps `Thread.name` to itself.
    package static func setOSName(_ name: String) {
        let short = name.hasPrefix("sightline.") ? String(name.dropFirst("sightline.".count)) : name
        // pthread_setname_np and prctl are not in Swift's Glibc module; the thread's comm file is.
        let fd = open("/proc/thread-self/comm", O_WRONLY)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let bytes = Array(short.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
}
