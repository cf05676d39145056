import Foundation
import Testing
@testable import SightlineVision
@testable import SightlineHTTP
@testable import SightlineCore
import SightlineTesting
import SightlineHTTPTesting

/// The template endpoints through the router, as the server runs them (the
/// worker's handlers run on the test's thread here).
@Suite struct TemplateAPITests {
    static let admin = ["authorization": "Bearer s3cret"]

    struct Fixture {
        let router: Router
        let library: TemplateLibrary
        let dataDirectory: String
    }

    static func fixture(frame: (Int, Int)? = (640, 480)) throws -> Fixture {
        let dir = try TestPaths.temporaryDirectory()
        let library = TemplateLibrary()
        let api = TemplateAPI(library: library, store: TemplateStore(dataDirectory: dir), uploadedNames: [],
                              defaultThreshold: 0.7, frameSize: { frame.map { (width: $0.0, height: $0.1) } })
        let auth = AuthGuard.testing()
        return Fixture(router: Router(routes: api.routes, authorize: { auth.refusal(for: $0, needs: $1) }),
                       library: library, dataDirectory: dir)
    }

    /// A textured PNG: a gradient with a square, `width` by `height`.
    static func png(_ width: Int = 60, _ height: Int = 40) throws -> Data {
        let image = ImageBuffer(width: width, height: height)
        for y in 0..<height {
            for x in 0..<width {
                let value = UInt8((x * 255 / width + (x / 7 + y / 5) % 2 * 60) % 256)
                for c in 0..<3 { image.bytes[y * image.stride + x * 3 + c] = value &+ UInt8(c * 20) }
            }
        }
        return try ImageIO.encode(image, as: ".png")
    }

    static func json(_ response: HTTPResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: response.bodyData ?? Data()) as? [String: Any])
    }

    @Test func uploadListThumbnailChangeAndDelete() throws {
        let f = try Self.fixture()
        let upload = HTTPRequest(method: .post, path: "/api/templates", query: ["name": "logo", "threshold": "0.8"],
                                 headers: Self.admin, body: try Self.png())
        let created = f.router.respond(to: upload)
        #expect(created.status == 201)
        #expect(f.library.all.map(\.name) == ["logo"] && f.library.all.first?.threshold == 0.8)

        let list = try Self.json(f.router.respond(to: HTTPRequest(method: .get, path: "/api/templates")))
        let first = try #require((list["templates"] as? [[String: Any]])?.first)
        #expect(first["name"] as? String == "logo" && first["width"] as? Int == 60)
        let thumbnail = f.router.respond(to: HTTPRequest(method: .get, path: first["thumbnail"] as! String))
        #expect(thumbnail.status == 200 && thumbnail.contentType == "image/png")
        #expect(try ImageIO.decode(thumbnail.bodyData ?? Data()).width == 60)

        let patch = HTTPRequest(method: .patch, path: "/api/templates/logo", headers: Self.admin,
                                body: Data(#"{"threshold": 0.5}"#.utf8))
        #expect(f.router.respond(to: patch).status == 200)
        #expect(f.library.all.first?.threshold == 0.5)
        #expect(f.router.respond(to: HTTPRequest(method: .delete, path: "/api/templates/logo", headers: Self.admin)).status == 200)
        #expect(f.library.all.isEmpty)
        #expect(f.router.respond(to: HTTPRequest(method: .get, path: "/api/templates/logo.png")).status == 404)
    }

    @Test func aParsedFormIsAnUpload() throws {
        let f = try Self.fixture()
        var request = HTTPRequest(method: .post, path: "/api/templates", headers: Self.admin)
        request.form = HTTPRequest.Form(fields: ["threshold": "0.9"], fileName: "shop sign.png", fileField: "file",
                                        file: try Self.png())
        #expect(f.router.respond(to: request).status == 201)
        #expect(f.library.all.first?.name == "shop sign" && f.library.all.first?.threshold == 0.9)
        request.form = HTTPRequest.Form(fields: ["name": "x"])
        #expect(f.router.respond(to: request).status == 400)   // a form without a file
    }

    @Test func badCallsGetTheirStatusAndChangeNothing() throws {
        let f = try Self.fixture(frame: (50, 50))
        let png = try Self.png()
        let cases: [(String, HTTPRequest, Int)] = [
            ("no token", HTTPRequest(method: .post, path: "/api/templates", query: ["name": "a"], body: png), 401),
            ("no name", HTTPRequest(method: .post, path: "/api/templates", headers: Self.admin, body: png), 400),
            ("newline in the name", HTTPRequest(method: .post, path: "/api/templates", query: ["name": "a\nb"],
                                                headers: Self.admin, body: png), 400),
            ("bad threshold", HTTPRequest(method: .post, path: "/api/templates", query: ["name": "a", "threshold": "2"],
                                          headers: Self.admin, body: png), 400),
            ("not an image", HTTPRequest(method: .post, path: "/api/templates", query: ["name": "a"],
                                         headers: Self.admin, body: Data("hello".utf8)), 415),
            ("wider than the frame", HTTPRequest(method: .post, path: "/api/templates", query: ["name": "a"],
                                                 headers: Self.admin, body: png), 422),
            ("unknown template", HTTPRequest(method: .delete, path: "/api/templates/zzz", headers: Self.admin), 404),
            ("wrong method", HTTPRequest(method: .post, path: "/api/templates/zzz", headers: Self.admin), 405),
        ]
        for (label, request, status) in cases {
            let response = f.router.respond(to: request)
            #expect(response.status == status, "\(label): \(String(decoding: response.bodyData ?? Data(), as: UTF8.self))")
            #expect(try Self.json(response)["error"] != nil, "\(label)")
        }
        #expect(f.library.all.isEmpty)
        let files = (try? FileManager.default.contentsOfDirectory(atPath: f.dataDirectory + "/templates")) ?? []
        #expect(!files.contains { $0.hasSuffix(".png") })
    }
}
