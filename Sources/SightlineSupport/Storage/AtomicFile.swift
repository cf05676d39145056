import Foundation
import Glibc

/// Writes a file whole or not at all: a temporary file beside it (written,
/// flushed to the disk), then rename. Written with POSIX calls so the errno
/// of a failure is known, and every failure is thrown as a `StorageError`
/// ("no space left on the device"), never as a Foundation error whose text
/// holds the server's paths. A failed write leaves no temporary file.
public enum AtomicFile {
    /// The size of the regular file at `path`; nil when there is none.
    public static func size(of path: String) -> Int? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int(info.st_size)
    }

    public static func write(_ data: Data, to path: String, permissions: Int = 0o644) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty { try makeDirectory(directory) }
        let temporary = path + ".tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode_t(permissions))
        guard fd >= 0 else { throw StorageError(errno: errno, path: temporary) }
        var failure: Int32 = 0
        // The mode exactly as asked (open's is narrowed by the umask, and a
        // leftover temporary file keeps the mode it had).
        if fchmod(fd, mode_t(permissions)) != 0 { failure = errno }
        if failure == 0 { failure = writeAll(data, to: fd) }
        // Quotas and network file systems may say so only here.
        if failure == 0 && fsync(fd) != 0 { failure = errno }
        if close(fd) != 0 && failure == 0 { failure = errno }
        if failure == 0 && rename(temporary, path) != 0 { failure = errno }
        if failure != 0 {
            unlink(temporary)
            throw StorageError(errno: failure, path: path)
        }
    }

    /// Makes `path` and its missing parents (like `mkdir -p`); a failure is a `StorageError`.
    public static func makeDirectory(_ path: String, permissions: Int = 0o755) throws {
        var info = stat()
        if stat(path, &info) == 0 {
            guard (info.st_mode & S_IFMT) == S_IFDIR else { throw StorageError(errno: ENOTDIR, path: path) }
            return
        }
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty && parent != path { try makeDirectory(parent, permissions: permissions) }
        if mkdir(path, mode_t(permissions)) != 0 && errno != EEXIST {
            throw StorageError(errno: errno, path: path)
        }
    }

    /// Whether a small file can be written in `directory` now: nil when it
    /// can, else why not. For code whose library writes without reporting
    /// failures (OpenCV's FileStorage), to learn why its file came out short.
    public static func probe(directory: String, bytes: Int = 64 * 1024) -> StorageError? {
        let path = (directory as NSString).appendingPathComponent(".write-probe-\(getpid())")
        do {
            try write(Data(count: bytes), to: path)
            unlink(path)
            return nil
        } catch let error as StorageError {
            return error
        } catch {
            return StorageError(reason: .other(EIO), path: path)
        }
    }

    /// 0, or the errno of the write that failed.
    private static func writeAll(_ data: Data, to fd: Int32) -> Int32 {
        data.withUnsafeBytes { raw -> Int32 in
            guard var next = raw.baseAddress else { return 0 }
            var left = raw.count
            while left > 0 {
                let written = Glibc.write(fd, next, left)
                if written < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                if written == 0 { return EIO }
                next += written
                left -= written
            }
            return 0
        }
    }
}
