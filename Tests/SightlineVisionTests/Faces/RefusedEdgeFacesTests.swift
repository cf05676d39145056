import Testing
@testable import SightlineVision

@Suite("Refused faces at the frame's edge")
struct RefusedEdgeFacesTests {
    /// A 100-pixel face on a 640x480 frame at (x, y).
    static func box(_ x: Double, _ y: Double) -> PixelRect<Double> { PixelRect(x: x, y: y, w: 100, h: 120) }

    static func atEdge(_ x: Double, _ y: Double) -> Bool {
        RefusedEdgeFaces.atEdge(box(x, y), width: 640, height: 480)
    }

    /// Whether `memory` leaves out a new face at (x, y) at `now`.
    static func skips(_ memory: inout RefusedEdgeFaces, _ x: Double, _ y: Double, at now: Double) -> Bool {
        memory.skips(box(x, y), width: 640, height: 480, at: now)
    }

    @Test("the edge: crossing it or within 5 % of the face's width of it; a face wholly in view is not at it")
    func edge() {
        #expect(Self.atEdge(-20, 100))
        #expect(Self.atEdge(3, 100))
        #expect(Self.atEdge(200, 0))
        #expect(Self.atEdge(560, 100))
        #expect(Self.atEdge(200, 400))
        #expect(!Self.atEdge(6, 6))
        #expect(!Self.atEdge(534, 354))
    }

    @Test("a face refused at the edge is left out while it stays there, its memory moving with it, for `seconds`")
    func leftOutWhileAtTheEdge() {
        var memory = RefusedEdgeFaces(seconds: 1)
        memory.refused(Self.box(-30, 100), width: 640, height: 480, at: 10)
        #expect(Self.skips(&memory, -20, 101, at: 10.2))
        #expect(Self.skips(&memory, -10, 102, at: 10.4))
        #expect(Self.skips(&memory, 0, 103, at: 10.6), "followed from where it was last")
        #expect(!Self.skips(&memory, 300, 200, at: 10.6), "another face")
        #expect(!Self.skips(&memory, 1, 103, at: 11.0), "a second on: checked again")
    }

    @Test("wholly in view, the face refused at the edge is checked at once")
    func checkedOnceInView() {
        var memory = RefusedEdgeFaces(seconds: 1)
        memory.refused(Self.box(-8, 100), width: 640, height: 480, at: 10)
        #expect(!Self.skips(&memory, 8, 100, at: 10.2))
    }

    @Test("a face refused inside the frame, or with the memory off, is checked on every pass")
    func insideIsNotRemembered() {
        var memory = RefusedEdgeFaces(seconds: 1)
        memory.refused(Self.box(200, 100), width: 640, height: 480, at: 10)
        #expect(!Self.skips(&memory, 200, 100, at: 10.1))
        var off = RefusedEdgeFaces(seconds: 0)
        off.refused(Self.box(-30, 100), width: 640, height: 480, at: 10)
        #expect(!Self.skips(&off, -30, 100, at: 10.1))
    }
}
