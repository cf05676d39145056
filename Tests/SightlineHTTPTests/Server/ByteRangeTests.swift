import Testing
@testable import SightlineHTTP

@Suite("Server: byte ranges")
struct ByteRangeTests {
    @Test("the three forms, clamped to the size; past the end is unsatisfiable")
    func forms() {
        #expect(ByteRange.parse("bytes=0-99", size: 1000) == .partial(0...99))
        #expect(ByteRange.parse("bytes=990-2000", size: 1000) == .partial(990...999))
        #expect(ByteRange.parse("bytes=500-", size: 1000) == .partial(500...999))
        #expect(ByteRange.parse("bytes=-500", size: 1000) == .partial(500...999))
        #expect(ByteRange.parse("bytes=-5000", size: 1000) == .partial(0...999))
        #expect(ByteRange.parse("bytes=999999999-", size: 1000) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=1000-1001", size: 1000) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=-0", size: 1000) == .unsatisfiable)
        #expect(ByteRange.parse(" Bytes=0-0 ", size: 1) == .partial(0...0))
    }

    @Test("what is not one byte range is ignored: the whole body")
    func ignored() {
        #expect(ByteRange.parse(nil, size: 10) == .whole)
        for header in ["items=0-1", "bytes=0-1,4-5", "bytes=5-2", "bytes=a-b", "bytes=", "bytes=-", "bytes=99999999999999999999-"] {
            #expect(ByteRange.parse(header, size: 10) == .whole, "\(header)")
        }
    }
}
