import Foundation
import SightlineSupport
import SightlineVision
import SightlinePipeline
import SightlineHTTP
import SightlineEvents

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

        struct Faces: Codable, Sendable {
            var mode: String?
            var passes: UInt64
            var passesPerSecond: Double
            /// Its part of the shared detection thread's passes now (0-1).
            var share: Double
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

    /// The one face detection thread every camera's passes run on.
    struct FaceDetection: Codable, Sendable {
        /// Cameras with faces on (the thread's lanes).
        var lanes: Int
        /// YuNet model files loaded (once each, for every camera).
        var modelsLoaded: Int
        var passesPerSecond: Double
    }

    struct Listing: Codable, Sendable {
        var cameras: [Summary]
        var faceDetection: FaceDetection
    }

    /// The cameras now (they come and go at runtime: `CameraRegistry`).
    let cameras: @Sendable () -> [CameraUnit]
    let sharing: FaceSharing
    let isAdmin: @Sendable (HTTPRequest) -> Bool

    var routes: [Route] {
        [
            Route(.get, "/api/cameras", access: .viewer) { [self] request in
                .json(listing(admin: isAdmin(request)))
            },
        ]
    }

    func listing(admin: Bool) -> Listing {
        let cameras = cameras()
        let snapshots = cameras.map { $0.graph.stats.snapshot() }
        let total = zip(cameras, snapshots).reduce(0.0) { sum, pair in
            sum + (pair.0.graph.facesInfo == nil ? 0 : pair.1.facePassesPerSecond)
        }
        let summaries = zip(cameras, snapshots).map { unit, stats in
            let status = unit.graph.capture.status
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
                                  passesPerSecond: stats.facePassesPerSecond.rounded(toPlaces: 2),
                                  share: total > 0 ? (stats.facePassesPerSecond / total).rounded(toPlaces: 3) : 0)
                },
                paths: Summary.Paths(ws: "/cam/\(name)/ws", mjpeg: "/cam/\(name)/stream.mjpg",
                                     snapshot: "/cam/\(name)/snapshot.jpg", api: "/api/cameras/\(name)/"))
        }
        return Listing(cameras: summaries,
                       faceDetection: FaceDetection(lanes: sharing.thread.laneCount, modelsLoaded: sharing.modelsLoaded,
                                                    passesPerSecond: total.rounded(toPlaces: 2)))
    }
}
