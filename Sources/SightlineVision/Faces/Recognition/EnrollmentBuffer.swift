import Foundation

/// Recent aligned near-frontal crops of each tracked face, so that naming a
/// face (or correcting its name) has something to learn from.
///
/// Crops are kept at most `capacity` per track, at least `minimumSpacing`
/// seconds apart (consecutive frames are nearly the same picture), and each
/// is learned at most once. Thread ownership: FaceService keeps it under
/// its state lock.
package struct EnrollmentBuffer {
    /// |yaw| at most this (degrees) counts as near-frontal.
    static let maxFrontalYaw = 20.0
    var capacity = 12
    var minimumSpacing: TimeInterval = 0.15

    package init() {}

    struct Crop {
        let image: ImageBuffer
        let time: TimeInterval
        var learned = false
    }

    private var crops: [Int: [Crop]] = [:]

    func crops(for trackID: Int) -> [Crop] { crops[trackID] ?? [] }

    /// A face with unknown yaw counts as frontal: the Haar fallback only finds
    /// frontal faces and reports no yaw.
    static func isNearFrontal(yaw: Double?) -> Bool { abs(yaw ?? 0) <= maxFrontalYaw }

    /// Keeps the crop if the face is near-frontal and spaced from the last one.
    /// Returns whether it was kept.
    @discardableResult
    package mutating func offer(_ image: ImageBuffer, trackID: Int, yaw: Double?, at time: TimeInterval) -> Bool {
        guard Self.isNearFrontal(yaw: yaw) else { return false }
        var list = crops[trackID] ?? []
        if let last = list.last, time - last.time < minimumSpacing { return false }
        list.append(Crop(image: image, time: time))
        if list.count > capacity { list.removeFirst(list.count - capacity) }
        crops[trackID] = list
        return true
    }

    package func count(for trackID: Int) -> Int { crops[trackID]?.count ?? 0 }

    /// Crops not learned yet, newest last, at most `limit`.
    package func unlearned(for trackID: Int, limit: Int = .max) -> [ImageBuffer] {
        Array((crops[trackID] ?? []).filter { !$0.learned }.map(\.image).suffix(limit))
    }

    /// Marks these crops (by identity) as learned.
    package mutating func markLearned(_ images: [ImageBuffer], trackID: Int) {
        guard var list = crops[trackID] else { return }
        let ids = Set(images.map(ObjectIdentifier.init))
        for i in list.indices where ids.contains(ObjectIdentifier(list[i].image)) { list[i].learned = true }
        crops[trackID] = list
    }

    package mutating func removeAll(except trackIDs: Set<Int>) {
        crops = crops.filter { trackIDs.contains($0.key) }
    }
}

extension EnrollmentBuffer {
    /// The newest crops, learned or not, at most `limit`.
    package func recent(for trackID: Int, limit: Int) -> [ImageBuffer] {
        Array((crops(for: trackID)).map(\.image).suffix(limit))
    }
}
