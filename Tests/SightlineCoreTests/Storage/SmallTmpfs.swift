import Foundation
import Glibc
import Testing
@testable import SightlineCore
import SightlineTesting

/// A small tmpfs mounted for one test, to make a real full disk (ENOSPC)
/// without touching any other file system. Needs root (or CAP_SYS_ADMIN);
/// tests that use it are enabled only when `available` says a mount works.
final class SmallTmpfs {
    struct MountFailed: Error, CustomStringConvertible { var description: String }

    /// Whether a tmpfs can be mounted here (tried once, then unmounted).
    static let available: Bool = getuid() == 0 && (try? SmallTmpfs()) != nil

    static let skipMessage: Comment = "needs root to mount a small tmpfs (mount -t tmpfs -o size=256k tmpfs DIR) for a full disk"

    let path: String
    private var filler: String { path + "/filler" }

    init(size: String = "256k") throws {
        path = try TestPaths.temporaryDirectory()
        guard Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size),mode=0755", "tmpfs", path]) == 0 else {
            rmdir(path)
            throw MountFailed(description: "mount -t tmpfs on \(path) failed")
        }
    }

    deinit {
        _ = Self.run("/bin/umount", ["-l", path])
        rmdir(path)
    }

    /// Fills it to the last byte: no new file gets a byte in after this.
    func fill() {
        let fd = open(filler, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let chunk = [UInt8](repeating: 0x5A, count: 1 << 16)
        var size = chunk.count
        while size > 0 {
            let written = chunk.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, size) }
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { size /= 2 }  // full at this size: try smaller pieces down to a byte
        }
    }

    /// Makes room again.
    func free() {
        unlink(filler)
    }

    private static func run(_ tool: String, _ arguments: [String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        do {
            try process.run()
        } catch {
            return -1
        }
        process.waitUntilExit()
        return process.terminationStatus
    }
}
