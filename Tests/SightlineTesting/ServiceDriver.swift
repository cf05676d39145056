import Foundation
import SightlineVision
import SightlinePipeline

/// Drives FaceService the way the pipeline does: one tracked face per frame,
/// the frame being an augmented view of a real photo.
package struct ServiceDriver {
    package let service: FaceService
    package var time: TimeInterval = 0

    package init(service: FaceService) {
        self.service = service
    }
    package static let frameInterval = 0.2  // beyond the crop spacing, so each frame is kept

    /// Shows the service `frames` views of `photo` as track `id`; returns the names it gave.
    @discardableResult
    package mutating func show(_ photo: FacePhoto, as id: Int, seeds: Range<UInt64>, yaw: Double = 0) throws -> [String?] {
        var names: [String?] = []
        for seed in seeds {
            let view = try AugmentedView(photo, seed: seed)
            var observation = view.observation
            observation.yaw = yaw
            let faces = service.process([TrackedFace(id: id, observation: observation, isPredicted: false)],
                                        frame: view.frame, at: time)
            time += Self.frameInterval * 3  // past the recognition interval: every frame is recognised
            names.append(faces.first?.identity?.name)
        }
        return names
    }
}
