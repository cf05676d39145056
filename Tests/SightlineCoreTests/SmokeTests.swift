import Testing
@testable import SightlineCore
@testable import SightlineSupport
@Test func version() { #expect(!SightlineVersion.string.isEmpty) }
