import Testing
@testable import SightlineCore
@Test func version() { #expect(!SightlineVersion.string.isEmpty) }
