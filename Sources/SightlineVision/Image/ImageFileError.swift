import Foundation

/// An image file or its bytes that could not be read, decoded or written
/// (PNG through libpng, files through Foundation; JPEG has `JPEGError`, the
/// other formats `OpenCVError`).
public struct ImageFileError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public var description: String { message }
}
