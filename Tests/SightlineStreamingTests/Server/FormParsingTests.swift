import Foundation
import Testing
@testable import SightlineVision
@testable import SightlineHTTP
@testable import SightlineStreaming

/// Forms parsed by libwebsockets' own `lws_spa` as the body arrives, tested
/// in process through a live `StreamServer` (lws_spa reads the Content-Type
/// and its boundary from the connection, so it needs a real one): the
/// handler gets the named fields and the first file's exact bytes.
@Suite(.serialized) struct FormParsingTests {
    static let boundary = "----sightline-form-test-4f1c"

    /// A handler that describes the form it was given.
    static let echo = Route(.post, "/api/form", access: .viewer, .worker) { request in
        guard let form = request.form else { return .text("no form, body of \(request.body.count) bytes") }
        return .json(["fields": form.fields.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "&"),
                      "fileName": form.fileName ?? "-", "fileField": form.fileField ?? "-",
                      "file": form.file?.base64EncodedString() ?? "-"])
    }

    static func serve(maxBodyBytes: Int = 8 << 20) throws -> StreamServer {
        try StreamServerTests.serve([echo]) { options in
            options.maxBodyBytes = maxBodyBytes
            // As SightlineServer sets it: an image by its bytes is taken whole.
            options.isWholeFile = { ImageUpload.format(of: $0) != nil }
        }
    }

    static func part(name: String, fileName: String? = nil, type: String? = nil, _ content: Data) -> Data {
        var head = "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\""
        if let fileName { head += "; filename=\"\(fileName)\"" }
        head += "\r\n"
        if let type { head += "Content-Type: \(type)\r\n" }
        var data = Data((head + "\r\n").utf8)
        data.append(content)
        data.append(Data("\r\n".utf8))
        return data
    }

    static func form(_ parts: [Data]) -> Data {
        var body = parts.reduce(Data(), +)
        body.append(Data("--\(boundary)--\r\n".utf8))
        return body
    }

    /// Bytes that look like form syntax: CRLFs, dashes, a near-boundary.
    static func trickyFile(_ count: Int) -> Data {
        var bytes = Data(count: count)
        var state: UInt32 = 12345
        for i in 0..<count {
            state = state &* 1_103_515_245 &+ 12345
            bytes[i] = UInt8(truncatingIfNeeded: state >> 16)
        }
        let decoy = Data("\r\n--\(boundary.dropLast())X\r\n--\r\n\r\n".utf8)
        for offset in stride(from: 100, to: count - decoy.count, by: 4099) {
            bytes.replaceSubrange(offset..<offset + decoy.count, with: decoy)
        }
        return bytes
    }

    static func post(_ server: StreamServer, _ body: Data, contentType: String? = nil,
                     pieces: [Int] = []) throws -> LoopbackHTTPClient.Answer {
        let client = try LoopbackHTTPClient(port: server.boundPort)
        let type = contentType ?? "multipart/form-data; boundary=\(boundary)"
        try client.send("POST /api/form HTTP/1.1\r\nHost: 127.0.0.1:\(server.boundPort)\r\n"
                        + "Content-Type: \(type)\r\nContent-Length: \(body.count)\r\n\r\n")
        // Send the body in the pieces asked for (with pauses, so lws reads them apart), then the rest.
        var offset = 0
        for cut in pieces {
            try client.send("", body: body.subdata(in: offset..<cut))
            offset = cut
            Thread.sleep(forTimeInterval: 0.05)
        }
        try client.send("", body: body.subdata(in: offset..<body.count))
        return try client.answer()
    }

    static func json(_ answer: LoopbackHTTPClient.Answer) throws -> [String: String] {
        try #require(try JSONSerialization.jsonObject(with: answer.body) as? [String: String], "\(answer.status) \(answer.text)")
    }

    @Test func fieldsAndTheFileArriveExactlyAsSent() throws {
        let server = try Self.serve()
        defer { server.stop() }
        let file = Self.trickyFile(300_000)
        let body = Self.form([Self.part(name: "threshold", Data("0.81".utf8)),
                              Self.part(name: "file", fileName: "front door.png", type: "image/png", file),
                              Self.part(name: "name", Data("été".utf8))])
        // Cut inside the file's part head and inside the closing boundary.
        let answer = try Self.post(server, body, pieces: [60, 150, body.count - 8])
        #expect(answer.status == 200)
        let form = try Self.json(answer)
        #expect(form["fields"] == "name=été&threshold=0.81")
        #expect(form["fileName"] == "front door.png" && form["fileField"] == "file")
        #expect(Data(base64Encoded: form["file"] ?? "") == file)
    }

    @Test func onlyTheFirstFileIsKeptAndUnknownFieldsAreIgnored() throws {
        let server = try Self.serve()
        defer { server.stop() }
        let first = Data("first file".utf8), second = Data("second file".utf8)
        let body = Self.form([Self.part(name: "file", fileName: "a.png", first),
                              Self.part(name: "other", fileName: "b.png", second),
                              Self.part(name: "colour", Data("blue".utf8))])
        let form = try Self.json(try Self.post(server, body))
        #expect(Data(base64Encoded: form["file"] ?? "") == first)
        #expect(form["fileName"] == "a.png" && form["fields"] == "")
    }

    @Test func onlyMultipartIsAForm() throws {
        let server = try Self.serve()
        defer { server.stop() }
        // curl --data-binary labels any file application/x-www-form-urlencoded: it arrives as sent.
        let urlencoded = try Self.post(server, Data("name=my+logo&threshold=0.5&x=%26".utf8),
                                       contentType: "application/x-www-form-urlencoded")
        #expect(urlencoded.text == "no form, body of 32 bytes", "\(urlencoded.status) \(urlencoded.text)")
        // A PNG or JPEG by its bytes is an image whatever its label says, even multipart's.
        let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + Data(repeating: 7, count: 100)
        let labelled = try Self.post(server, png, contentType: "multipart/form-data; boundary=x")
        #expect(labelled.text == "no form, body of 108 bytes", "\(labelled.status) \(labelled.text)")
        let jpeg = Data([0xFF, 0xD8, 0xFF, 0xE0]) + Data(repeating: 1, count: 60)
        let urlJPEG = try Self.post(server, jpeg, contentType: "application/x-www-form-urlencoded")
        #expect(urlJPEG.text == "no form, body of 64 bytes")
    }

    @Test func brokenFormsAreRefusedWithJSON() throws {
        let server = try Self.serve(maxBodyBytes: 64 << 10)
        defer { server.stop() }
        let good = Self.form([Self.part(name: "file", fileName: "a.png", Data("abc".utf8))])
        // No boundary in the Content-Type.
        let noBoundary = try Self.post(server, good, contentType: "multipart/form-data")
        #expect(noBoundary.status == 400 && noBoundary.headers["content-type"] == "application/json", "\(noBoundary.status) \(noBoundary.text)")
        // Cut off inside the file's part.
        let cut = try Self.post(server, good.prefix(good.count - 12))
        #expect(cut.status == 400 && cut.text.contains("malformed form data"), "\(cut.status) \(cut.text)")
        // A file larger than the body limit allows (the request says so up front: 413 at once).
        let large = Self.form([Self.part(name: "file", fileName: "big.png", Self.trickyFile(80 << 10))])
        let refused = try Self.post(server, large)
        #expect(refused.status == 413)
        // Not a form: the body as it came.
        let raw = try Self.post(server, Data("plain".utf8), contentType: "image/png")
        #expect(raw.text == "no form, body of 5 bytes")
    }
}
