import CSightlineOpenCV

/// One gray frame's optical-flow pyramid (`slcv_flow_pyramid`: its levels and
/// their derivatives), built once and read by every face measured on it
/// (`FaceFlow.motion(of:landmarks:from:to:)` with pyramids). With many faces
/// in view this costs less than each face's own pair of small pyramids
/// (`FaceFlow.prefersWholeFrame`).
///
/// Thread ownership: made, read and freed on one thread (the pipeline
/// thread's FaceStage). Not Sendable.
package final class FlowPyramid {
    /// The largest search window a pyramid serves (`FaceFlow` picks 9-11).
    static let window = 11

    let pointer: OpaquePointer
    let width: Int
    let height: Int

    /// The pyramid of `gray` (copied into it), `levels` levels above it.
    package init(_ gray: ImageBuffer, levels: Int) throws {
        guard gray.channels == 1 else { throw OpenCVError(code: 20, message: "optical flow needs gray images") }
        var made: OpaquePointer?
        try OpenCVError.check { err in
            made = slcv_flow_pyramid_build(gray.cView, Int32(Self.window), Int32(levels), err)
            return made == nil ? max(1, err.pointee.code) : 0
        }
        guard let made else { throw OpenCVError(code: -1, message: "no pyramid") }
        pointer = made
        width = gray.width
        height = gray.height
    }

    deinit { slcv_flow_pyramid_free(pointer) }
}
