import Foundation

/// The parts of a multipart/form-data body (what a browser's form or
/// FormData upload sends).
public struct MultipartForm: Sendable {
    public struct Part: Sendable {
        public var name: String?
        public var filename: String?
        public var contentType: String?
        public var data: Data
    }

    public var parts: [Part]

    /// nil when the content type is not multipart/form-data with a boundary.
    public static func boundary(of contentType: String) -> String? {
        guard contentType.lowercased().hasPrefix("multipart/form-data") else { return nil }
        for item in contentType.split(separator: ";") {
            let pair = item.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            if pair.count == 2, pair[0].lowercased() == "boundary" {
                return pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }
        }
        return nil
    }

    public init(body: Data, boundary: String) throws {
        let delimiter = Data(("--" + boundary).utf8)
        var parts: [Part] = []
        var cursor = body.startIndex
        guard let first = body.range(of: delimiter, in: cursor..<body.endIndex) else {
            throw MultipartError("no part boundary in the body")
        }
        cursor = first.upperBound
        while true {
            // After a delimiter: "--" ends the form, CRLF starts a part.
            if body[cursor...].starts(with: Data("--".utf8)) { break }
            guard body[cursor...].starts(with: Data("\r\n".utf8)) else { throw MultipartError("malformed part boundary") }
            let headerStart = cursor + 2
            guard let headerEnd = body.range(of: Data("\r\n\r\n".utf8), in: headerStart..<body.endIndex) else {
                throw MultipartError("a part has no end of headers")
            }
            guard let next = body.range(of: Data("\r\n".utf8) + delimiter, in: headerEnd.upperBound..<body.endIndex) else {
                throw MultipartError("the body ends inside a part")
            }
            let headers = String(decoding: body[headerStart..<headerEnd.lowerBound], as: UTF8.self)
            parts.append(Self.part(headers: headers, data: Data(body[headerEnd.upperBound..<next.lowerBound])))
            cursor = next.upperBound
        }
        self.parts = parts
    }

    private static func part(headers: String, data: Data) -> Part {
        var part = Part(data: data)
        for line in headers.components(separatedBy: "\r\n") {
            let pieces = line.split(separator: ":", maxSplits: 1)
            guard pieces.count == 2 else { continue }
            let value = pieces[1].trimmingCharacters(in: .whitespaces)
            switch pieces[0].lowercased() {
            case "content-disposition":
                for item in value.split(separator: ";") {
                    let pair = item.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
                    guard pair.count == 2 else { continue }
                    let text = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                    if pair[0] == "name" { part.name = text }
                    if pair[0] == "filename" { part.filename = text }
                }
            case "content-type":
                part.contentType = value
            default:
                break
            }
        }
        return part
    }

    /// The first part that carries a file, or else the one named "file".
    public var file: Part? { parts.first { $0.filename != nil } ?? parts.first { $0.name == "file" } }

    public func field(_ name: String) -> String? {
        parts.first { $0.name == name && $0.filename == nil }.map { String(decoding: $0.data, as: UTF8.self) }
    }
}

public struct MultipartError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
