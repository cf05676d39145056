import CSightlineLWS
import Foundation
import SightlineSupport

/// Parses a multipart/form-data body as it arrives,
/// with libwebsockets' own parser, `lws_spa`: named fields are kept (up to
/// `fieldBytes` in all), and the first file's bytes are collected from the
/// parser's upload callback. What the handler gets is `HTTPRequest.Form`.
///
/// Threads: made, fed and finished on the lws service thread, for one
/// connection (`Connection.form`); lws_spa reads the request's Content-Type
/// (and its boundary) from the connection when it is made.
final class FormCollector {
    /// The fields any handler reads; lws_spa wants them named up front.
    static let fieldNames = ["name", "threshold"]
    static let fieldBytes: Int32 = 4096

    private var spa: OpaquePointer?
    private let names: [UnsafeMutablePointer<CChar>?]
    private let maxBytes: Int
    private var file = Data()
    private var fileName: String?
    private var fileField: String?
    private var files = 0
    private var tooLarge = false
    /// For multipart bodies: the close delimiter (`--boundary--`) the body must
    /// end with, and the body's last bytes to check it against (lws_spa
    /// finalizes a body cut off inside a part without complaint).
    private let closeDelimiter: Data?
    private var tail = Data()
    private let missingBoundary: Bool

    /// Only multipart/form-data is a form here: what the page and `curl -F`
    /// send. Any other body (curl's `--data-binary`, labelled
    /// application/x-www-form-urlencoded by default, included) reaches the
    /// handler as it came.
    static func accepts(contentType: String?) -> Bool {
        (contentType ?? "").lowercased().hasPrefix("multipart/form-data")
    }

    /// The `boundary` parameter of a multipart Content-Type (quoted or not); nil if absent.
    static func boundary(of contentType: String) -> String? {
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "boundary" else { continue }
            var value = pair[1].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            return value.isEmpty || value.utf8.count > 70 ? nil : value
        }
        return nil
    }

    init(wsi: OpaquePointer, contentType: String, maxBytes: Int) {
        self.maxBytes = maxBytes
        if contentType.lowercased().hasPrefix("multipart/") {
            let boundary = Self.boundary(of: contentType)
            closeDelimiter = boundary.map { Data("--\($0)--".utf8) }
            missingBoundary = boundary == nil
        } else {
            closeDelimiter = nil
            missingBoundary = false
        }
        names = Self.fieldNames.map { strdup($0) }
        var info = lws_spa_create_info_t()
        info.count_params = Int32(names.count)
        info.max_storage = Self.fieldBytes
        info.opt_cb = formFileEntry
        info.opt_data = Unmanaged.passUnretained(self).toOpaque()
        spa = names.withUnsafeBufferPointer { pointers in
            pointers.withMemoryRebound(to: UnsafePointer<CChar>?.self) { constNames in
                info.param_names = constNames.baseAddress
                return lws_spa_create_via_info(wsi, &info)
            }
        }
    }

    deinit {
        if let spa { lws_spa_destroy(spa) }
        names.forEach { free($0) }
    }

    /// A piece of the body; an error answer when it cannot be parsed.
    func feed(_ bytes: UnsafeMutableRawPointer, _ count: Int) -> HTTPResponse? {
        guard let spa, !missingBoundary else {
            return .error(400, "malformed form data", detail: "the form's content type has no boundary")
        }
        if let closeDelimiter {
            // Enough of the end to find the close delimiter followed by a line break or two.
            let keep = closeDelimiter.count + 4
            tail.append(bytes.assumingMemoryBound(to: UInt8.self), count: count)
            if tail.count > 4 * keep { tail.removeFirst(tail.count - keep) }
        }
        if lws_spa_process(spa, bytes.assumingMemoryBound(to: CChar.self), Int32(count)) < 0 || tooLarge {
            return tooLarge ? .error(413, "request body too large", detail: "the limit is \(maxBytes) bytes")
                : .error(400, "malformed form data", detail: "the multipart body does not parse")
        }
        return nil
    }

    /// The body is complete: the fields and the file.
    func finish() -> Result<HTTPRequest.Form, Refusal> {
        guard let spa, !missingBoundary else {
            return .failure(Refusal(response: .error(400, "malformed form data", detail: "the form's content type has no boundary")))
        }
        guard lws_spa_finalize(spa) >= 0, endsWithCloseDelimiter else {
            return .failure(Refusal(response: .error(400, "malformed form data",
                                                     detail: "the multipart body ends before its closing boundary")))
        }
        var form = HTTPRequest.Form()
        for (index, name) in Self.fieldNames.enumerated() {
            if let value = lws_spa_get_string(spa, Int32(index)) { form.fields[name] = String(cString: value) }
        }
        if files > 0 {
            form.file = file
            form.fileName = fileName
            form.fileField = fileField
        }
        return .success(form)
    }

    /// Whether a multipart body ended with `--boundary--` (line breaks after it
    /// allowed; an epilogue of other text is not: no browser or client sends one).
    private var endsWithCloseDelimiter: Bool {
        guard let closeDelimiter else { return true }
        var end = tail.endIndex
        while end > tail.startIndex, [UInt8(ascii: "\r"), UInt8(ascii: "\n")].contains(tail[end - 1]) { end -= 1 }
        return tail[tail.startIndex..<end].suffix(closeDelimiter.count) == closeDelimiter
    }

    /// lws_spa's upload callback (service thread, inside `feed`/`finish`).
    fileprivate func upload(field: String?, filename: String?, bytes: UnsafeMutablePointer<CChar>?, count: Int32,
                            state: lws_spa_fileupload_states) -> Int32 {
        switch state {
        case LWS_UFS_OPEN:
            files += 1
            if files == 1 {
                fileName = filename
                fileField = field
            }
        case LWS_UFS_CONTENT, LWS_UFS_FINAL_CONTENT:
            guard files == 1, let bytes, count > 0 else { return 0 }
            guard file.count + Int(count) <= maxBytes else {
                tooLarge = true
                return -1
            }
            file.append(UnsafeRawPointer(bytes).assumingMemoryBound(to: UInt8.self), count: Int(count))
        default:
            break
        }
        return 0
    }
}

private func formFileEntry(_ data: UnsafeMutableRawPointer?, _ name: UnsafePointer<CChar>?, _ filename: UnsafePointer<CChar>?,
                           _ bytes: UnsafeMutablePointer<CChar>?, _ count: Int32, _ state: lws_spa_fileupload_states) -> Int32 {
    guard let data else { return -1 }
    return Unmanaged<FormCollector>.fromOpaque(data).takeUnretainedValue()
        .upload(field: name.map { String(cString: $0) }, filename: filename.map { String(cString: $0) },
                bytes: bytes, count: count, state: state)
}

/// A form that could not be read, with the answer to send.
struct Refusal: Error {
    let response: HTTPResponse
}
