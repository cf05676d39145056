// libFuzzer target: request routing and the checks made before any handler.
// The input is split on 0x00 into method, path, query pairs and headers, which
// become an HTTPRequest; it goes through a route table shaped like the real one
// (parameters, inline and worker routes, viewer and admin access) with the real
// AuthGuard (Bearer, Basic, session cookie, back-off) and AccessPolicy (Origin,
// Host), and through the parsers of query-driven endpoints. Nothing may crash,
// and every refusal must be a 4xx. Built by `make fuzz` (Tests/Fuzz/README.md).
import Foundation
@testable import SightlineCore
@testable import SightlineVision
@testable import SightlineSupport
@testable import SightlinePipeline
@testable import SightlineHTTP
@testable import SightlineEvents

let auth = AuthGuard(tokens: TokenStore(fixed: [(name: "admin", role: .admin, token: "s3cret"),
                                                (name: "tv", role: .viewer, token: "v1ewer")]),
                     policy: AccessPolicy(viewOpen: false, loopbackBound: true, allowedOrigins: ["https://ok.example"]))
let ok: Route.Handler = { request in .json(request.parameters) }
let router = Router(routes: [
    Route(.get, "/", access: .anyone, handler: ok),
    Route(.get, "/api/state", access: .viewer, handler: ok),
    Route(.get, "/api/templates/{name}.png", access: .viewer, .worker, handler: ok),
    Route(.patch, "/api/templates/{name}", access: .admin, .worker, handler: ok),
    Route(.delete, "/api/templates/{name}", access: .admin, .worker, handler: ok),
    Route(.post, "/api/faces/{id}/name", access: .admin, .worker, handler: ok),
    Route(.get, "/api/events/{id}/snapshot.jpg", access: .viewer, handler: ok),
    Route(.get, "/healthz", access: .anyone, handler: ok),
], authorize: { auth.refusal(for: $0, needs: $1) }, fallback: { _ in .error(404, "no such file", detail: "") })
let methods: [HTTPRequest.Method] = [.get, .post, .put, .patch, .delete, .options, .head, .other]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRouting(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    guard let first = bytes.first else { return 0 }
    let parts = bytes.dropFirst().split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    let path = parts.first.map { $0.hasPrefix("/") ? $0 : "/" + $0 } ?? "/"
    var query: [String: String] = [:]
    var headers: [String: String] = [:]
    for part in parts.dropFirst() {
        guard let split = part.firstIndex(of: "=") ?? part.firstIndex(of: ":") else { continue }
        let key = String(part[..<split]), value = String(part[part.index(after: split)...])
        if part[split] == "=" { query[key] = value } else { headers[key.lowercased()] = value }
    }
    let request = HTTPRequest(method: methods[Int(first) % methods.count], path: path, query: query, headers: headers,
                              peer: "127.0.0.\(first % 4)")
    _ = auth.policy.hostRefusal(request, port: 8080)
    _ = auth.policy.corsHeaders(request)
    _ = request.basicPassword
    _ = request.bearerToken
    switch router.decide(request) {
    case .respond(let response):
        if response.status >= 500 { fatalError("a 5xx for \(request.method) \(path): \(response.status)") }
    case .work(let matched, let handler):
        _ = handler(matched)
    }
    _ = RequestHeaders.sizeRefusal(uriBytes: path.utf8.count, headers: headers)
    _ = EventQuery.parse(query)
    _ = TemplateName.problem(with: path)
    _ = PersonName.validated(path)
    _ = PathPattern("/api/{a}/x/{b}.png").match(path)
    return 0
}

// SwiftPM links executables with main renamed to <module>_main (for testable
// executables); libFuzzer's own main is then not linked, so this one starts it.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(_ argc: UnsafeMutablePointer<CInt>,
                     _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                     _ callback: @convention(c) (UnsafeRawPointer, Int) -> CInt) -> CInt

@_cdecl("FuzzRouting_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return runFuzzerDriver(&count, &arguments) { fuzzRouting($0, $1) }
}
