import Foundation

/// `GET /api/cameras`: every camera of the server with its routes and how
/// it is doing now (source state, frame rates, viewers, face passes), the
/// first being the camera of the unprefixed routes. Each camera's own API is
/// under `/api/cameras/NAME/` (`.../state`, `.../templates`, `.../events`,
/// `.../source`, ...), its streams and snapshot under `/cam/NAME/`.
///
/// Threads: answers inline on the service thread, from memory (the stats'
/// and capture status' locks).
struct CamerasAPI: Sendable {
    struct Summary: Codable, Sendable {
        struct Paths: Codable, Sendable, Equatable {
            var ws: String
            var mjpeg: String
            var snapshot: String
            var api: String
        }

        struct Faces: Codable, Sendable, Equatable {
            var mode: String?
            var passes: UInt64
            var passesPerSecond: Double
        }

        var name: String
        /// Its name in events and MQTT topics.
        var camera: String
        /// Admins: the spec; viewers: its public form.
        var source: String
        var state: String
        var width: Int?
        var height: Int?
        var fps: ServerState.Rates
        var clients: ServerState.Clients
        var faces: Faces?
        var paths: Paths
    }

    struct Listing: Codable, Sendable {
        var cameras: [Summary]
    }

    let cameras: [CameraUnit]
    let isAdmin: @Sendable (HTTPRequest) -> Bool

    var routes: [Route] {
        [
            Route(.get, "/api/cameras", access: .viewer) { [self] request in
                .json(listing(admin: isAdmin(request)))
            },
        ]
    }

    func listing(admin: Bool) -> Listing {
        Listing(cameras: cameras.map { unit in
            let status = unit.graph.capture.status
            let stats = unit.graph.stats.snapshot()
            let name = unit.name
            return Summary(
                name: name, camera: unit.settings.cameraName,
                source: admin ? status.spec : SourceSpec.publicForm(status.spec), state: status.state.rawValue,
                width: status.format?.width, height: status.format?.height,
                fps: ServerState.Rates(capture: stats.captureFPS.rounded(toPlaces: 2),
                                       processed: stats.processedFPS.rounded(toPlaces: 2),
                                       sent: stats.sentFPS.rounded(toPlaces: 2)),
                clients: ServerState.Clients(ws: stats.webSocketClients, mjpeg: stats.mjpegClients),
                faces: unit.graph.facesInfo.map { _ in
                    Summary.Faces(mode: stats.faceMode?.rawValue, passes: stats.facePasses,
                                  passesPerSecond: stats.facePassesPerSecond.rounded(toPlaces: 2))
                },
                paths: Summary.Paths(ws: "/cam/\(name)/ws", mjpeg: "/cam/\(name)/stream.mjpg",
                                     snapshot: "/cam/\(name)/snapshot.jpg", api: "/api/cameras/\(name)/"))
        })
    }
}
