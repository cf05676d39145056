import Foundation
import Testing
@testable import SightlineVision
@testable import SightlinePipeline
@testable import SightlineHTTP
@testable import SightlineCore
import SightlineTesting
import SightlineHTTPTesting

@Suite struct FaceAPITests {
    static let tokenValue = "s3cret"

    /// A service that has seen Ada's face as track 1 for a few frames.
    /// The face routes behind the router, as the server serves them.
    static func router(_ service: FaceService) -> Router {
        let auth = AuthGuard.testing()
        return Router(routes: FaceAPI(service: service).routes, authorize: { auth.refusal(for: $0, needs: $1) })
    }

    static func apiWithATrackedFace(dataDirectory: String? = nil) throws -> (Router, ServiceDriver, FacePhoto) {
        let service = try dataDirectory.map { try FaceService(dataDirectory: $0) }
            ?? FaceService(recognizer: try FaceRecognizer(store: nil))
        var driver = ServiceDriver(service: service)
        let ada = try FacePhoto.load(FacePhoto.ada)
        try driver.show(ada, as: 1, seeds: 0..<12)
        return (router(service), driver, ada)
    }

    static func post(_ path: String, _ body: String, token: String? = FaceAPITests.tokenValue) -> HTTPRequest {
        var headers = ["content-type": "application/json"]
        if let token { headers["authorization"] = "Bearer \(token)" }
        return HTTPRequest(method: .post, path: path, headers: headers, body: Data(body.utf8))
    }

    static func json(_ response: HTTPResponse?) throws -> [String: Any] {
        let data = try #require(response?.bodyData)
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test func mutatingCallsNeedTheToken() throws {
        let (api, _, _) = try Self.apiWithATrackedFace()
        for request in [Self.post("/api/faces/1/name", #"{"name": "Ada"}"#, token: nil),
                        Self.post("/api/faces/1/name", #"{"name": "Ada"}"#, token: "wrong"),
                        Self.post("/api/faces/1/feedback", #"{"correct": true}"#, token: nil),
                        HTTPRequest(method: .delete, path: "/api/people/Ada")] {
            let response = api.respond(to: request)
            #expect(response.status == 401, "\(request.method) \(request.path)")
            #expect(try Self.json(response)["error"] as? String != nil)
        }
    }

    @Test func unknownIdsAndBadInputGetClear4xx() throws {
        let (api, _, _) = try Self.apiWithATrackedFace()
        let cases: [(HTTPRequest, Int)] = [
            (Self.post("/api/faces/99/name", #"{"name": "Ada"}"#), 404),
            (Self.post("/api/faces/abc/name", #"{"name": "Ada"}"#), 400),
            (Self.post("/api/faces/1/name", #"{"name": ""}"#), 400),
            (Self.post("/api/faces/1/name", #"{"name": "   "}"#), 400),
            (Self.post("/api/faces/1/name", #"{"name": "../etc/passwd"}"#), 400),
            (Self.post("/api/faces/1/name", "{\"name\": \"a\\u0000b\"}"), 400),
            (Self.post("/api/faces/1/name", "{\"name\": \"\(String(repeating: "x", count: 65))\"}"), 400),
            (Self.post("/api/faces/1/name", #"{"name": 5}"#), 400),
            (Self.post("/api/faces/1/name", "not json"), 400),
            (Self.post("/api/faces/1/feedback", #"{"correct": false}"#), 400),
            (Self.post("/api/faces/1/feedback", #"{"correct": true}"#), 409),  // nobody named yet
            (HTTPRequest(method: .delete, path: "/api/people/Nobody", headers: ["authorization": "Bearer s3cret"]), 404),
            (HTTPRequest(method: .get, path: "/api/faces/1/name"), 405),
        ]
        for (request, status) in cases {
            let response = api.respond(to: request)
            #expect(response.status == status, "\(request.method) \(request.path) \(String(decoding: request.body, as: UTF8.self))")
            let body = try Self.json(response)
            #expect(!(body["detail"] as? String ?? "").isEmpty, "a detail saying what to do")
        }
        #expect(api.respond(to: HTTPRequest(method: .get, path: "/api/state")).status == 404, "not one of its routes")
    }

    @Test func namingAFaceEnrollsItListsItAndDeletingForgetsIt() throws {
        let directory = try TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let setup = try Self.apiWithATrackedFace(dataDirectory: directory)
        let api = setup.0, ada = setup.2
        var driver = setup.1

        let named = api.respond(to: Self.post("/api/faces/1/name", #"{"name": " Ada "}"#))
        #expect(named.status == 200)
        let body = try Self.json(named)
        #expect(body["name"] as? String == "Ada")
        #expect((body["learned"] as? Int ?? 0) > 0)

        let names = try driver.show(ada, as: 1, seeds: EnrolledFaces.testSeeds.prefix(5))
        #expect(names.filter { $0 == "Ada" }.count >= 4, "names after enrolling: \(names)")

        let people = try Self.json(api.respond(to: HTTPRequest(method: .get, path: "/api/people")))
        let listed = try #require(people["people"] as? [[String: Any]])
        #expect(listed.count == 1 && listed.first?["name"] as? String == "Ada")

        // A restart (a new service over the same data directory) still knows Ada.
        #expect(try FaceService(dataDirectory: directory).people().map(\.name) == ["Ada"])

        let deleted = api.respond(to: HTTPRequest(method: .delete, path: "/api/people/ada",
                                                  headers: ["authorization": "Bearer s3cret"]))
        #expect(deleted.status == 200)
        #expect(driver.service.people().isEmpty)
        #expect(try FaceService(dataDirectory: directory).people().isEmpty)
        let afterDelete = try driver.show(ada, as: 1, seeds: 2000..<2003)
        #expect(afterDelete.allSatisfy { $0 == nil })
    }

    @Test func detectionCarriesIdNameAndConfidence() throws {
        let (recognizer, ada, _) = try EnrolledFaces.enrolled()
        let service = FaceService(recognizer: recognizer)
        let view = try AugmentedView(ada, seed: 1000)
        let faces = service.process([TrackedFace(id: 7, observation: view.observation, isPredicted: false)],
                                    frame: view.frame, at: 0)
        let detection = try #require(faces.first).detection(frameWidth: view.frame.width, frameHeight: view.frame.height)
        #expect(detection.kind == .face && detection.id == 7)
        #expect(detection.name == "Ada")
        #expect((0...1).contains(try #require(detection.nameConfidence)))
        #expect(detection.landmarks?["rightEye"]?.count == 2)
        #expect(detection.box.w > 0 && detection.box.w <= 1)
    }
}
