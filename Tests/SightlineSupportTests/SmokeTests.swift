import Testing
@testable import SightlineSupport
@Test func version() { #expect(!SightlineVersion.string.isEmpty) }
