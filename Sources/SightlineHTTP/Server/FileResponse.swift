import Foundation
import SightlineSupport

extension HTTPResponse {
    /// One answer reads at most this much of a file; a longer range gets its
    /// first part (206 says which), and players ask for the rest.
    static let maxRangeBytes = 8 << 20
    /// A GET without a range reads the whole file, up to this.
    static let maxWholeBytes = 512 << 20

    /// A file (a clip, a recording) as `request` asks for it: whole (200),
    /// a byte range (206 with `Content-Range`; `ByteRange`), 416 for a range
    /// past its end, and for HEAD the length without reading it. Files grow
    /// while written: each answer is of the file as it is when asked.
    ///
    /// Blocks on the disk: for routes on the request worker.
    package static func file(_ path: String, contentType: String, request: HTTPRequest, missing: HTTPResponse) -> HTTPResponse {
        guard let file = FileHandle(forReadingAtPath: path) else { return missing }
        defer { try? file.close() }
        guard let end = try? file.seekToEnd() else { return .error(500, "cannot read the file") }
        let size = Int(end)
        guard size > 0 else { return .error(404, "empty", detail: "nothing has been written to it yet") }
        var headers: [(String, String)] = [("accept-ranges:", "bytes"), ("cache-control:", "no-cache")]
        var status = 200
        var range = 0...(size - 1)
        switch ByteRange.parse(request.headers["range"], size: size) {
        case .unsatisfiable:
            var answer = HTTPResponse.error(416, "range not satisfiable", detail: "the file has \(size) bytes")
            answer.headers = [("content-range:", "bytes */\(size)"), ("accept-ranges:", "bytes")]
            return answer
        case .partial(let wanted):
            status = 206
            range = wanted.lowerBound...min(wanted.upperBound, wanted.lowerBound + maxRangeBytes - 1)
            headers.append(("content-range:", "bytes \(range.lowerBound)-\(range.upperBound)/\(size)"))
        case .whole:
            guard size <= maxWholeBytes else {
                return .error(413, "too large to send whole", detail: "ask for byte ranges (Range: bytes=0-)")
            }
        }
        if request.method == .head {
            var answer = HTTPResponse.data(Data(), contentType: contentType, status: status, headers: headers)
            answer.headLength = range.count
            return answer
        }
        do {
            try file.seek(toOffset: UInt64(range.lowerBound))
            let data = try file.read(upToCount: range.count) ?? Data()
            guard data.count == range.count else { return .error(500, "cannot read the file", detail: "it changed while read") }
            return .data(data, contentType: contentType, status: status, headers: headers)
        } catch {
            return .error(500, "cannot read the file", detail: StorageError(error, path: "")?.reason.description ?? "read failed")
        }
    }
}
