import SightlineVision

/// Ada and Bob enrolled from augmented crops of their photos, and the seeds of the crops held back.
package enum EnrolledFaces {
    package static let enrollSeeds: Range<UInt64> = 0..<20
    /// Held back: different augmentations, never enrolled.
    package static let testSeeds: Range<UInt64> = 1000..<1030

    /// Enrolls Ada and Bob from augmented crops of their photos.
    package static func enrolled(store: PeopleStore? = nil) throws -> (FaceRecognizer, FacePhoto, FacePhoto) {
        let ada = try FacePhoto.load(FacePhoto.ada), bob = try FacePhoto.load(FacePhoto.bob)
        let recognizer = try FaceRecognizer(store: store)
        try recognizer.enroll(ada.crops(seeds: enrollSeeds), as: "Ada")
        try recognizer.enroll(bob.crops(seeds: enrollSeeds), as: "Bob")
        return (recognizer, ada, bob)
    }

    package static func answers(_ recognizer: FaceRecognizer, _ crops: [ImageBuffer]) throws -> [FaceIdentity?] {
        try crops.map { try recognizer.identify($0) }
    }
}
