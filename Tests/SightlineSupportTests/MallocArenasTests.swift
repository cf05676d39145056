import Testing
@testable import SightlineSupport

@Suite("Malloc arenas")
struct MallocArenasTests {
    @Test("a paced trim runs once in each interval, whatever asks in between")
    func pacedTrim() {
        // Far past any real monotonic time, so other callers cannot interfere.
        let start = 1e12
        #expect(MallocArenas.returnFreedPages(atMostEvery: 5, now: start))
        #expect(!MallocArenas.returnFreedPages(atMostEvery: 5, now: start + 1))
        #expect(!MallocArenas.returnFreedPages(atMostEvery: 5, now: start + 4.9))
        #expect(MallocArenas.returnFreedPages(atMostEvery: 5, now: start + 5))
        #expect(!MallocArenas.returnFreedPages(atMostEvery: 5, now: start + 6))
    }
}
