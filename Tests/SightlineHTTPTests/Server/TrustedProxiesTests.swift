import Testing
@testable import SightlineHTTP

/// TrustedProxies on its own: which addresses and blocks it takes, which
/// peers it trusts, and the client it reads out of X-Forwarded-For and
/// Forwarded (issue 38, item 5).
@Suite struct TrustedProxiesTests {
    static let proxies = try! TrustedProxies(["127.0.0.1", "10.0.0.0/8", "fd00::/8", "::1"])

    @Test func addressesAndBlocksOfBothFamiliesAreTrusted() {
        let trusted = Self.proxies
        #expect(trusted.contains("127.0.0.1"))
        #expect(!trusted.contains("127.0.0.2"))
        #expect(trusted.contains("10.0.0.1"))
        #expect(trusted.contains("10.255.255.255"))
        #expect(!trusted.contains("11.0.0.1"))
        #expect(trusted.contains("fd12:3456::1"))
        #expect(!trusted.contains("fe80::1"))
        #expect(trusted.contains("::1"))
        #expect(trusted.contains("::ffff:10.1.2.3"), "an IPv4-mapped IPv6 address is its IPv4 address")
        #expect(!trusted.contains("not-an-address"))
        #expect(!trusted.contains(""))
    }

    @Test func blocksWithPrefixesThatAreNotWholeBytes() throws {
        let trusted = try TrustedProxies(["172.16.0.0/12", "192.168.1.128/25", "0.0.0.0/0"])
        #expect(trusted.contains("172.31.255.1"))
        #expect(trusted.contains("1.2.3.4"), "0.0.0.0/0 is every IPv4 address")
        #expect(!trusted.contains("::2"), "but no IPv6 one")
        let narrow = try TrustedProxies(["172.16.0.0/12", "192.168.1.128/25"])
        #expect(!narrow.contains("172.32.0.1"))
        #expect(narrow.contains("192.168.1.200"))
        #expect(!narrow.contains("192.168.1.127"))
    }

    @Test(arguments: ["", "10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0/-1", "10.0.0.0/8x", "proxy.local", "1.2.3"])
    func entriesThatAreNoAddressAreRefusedWithTheirText(entry: String) {
        #expect(throws: TrustedProxies.Invalid(entry: entry)) { try TrustedProxies([entry]) }
    }

    @Test func anUntrustedPeersHeadersAreIgnored() {
        let client = Self.proxies.client(peer: "192.0.2.7", forwardedFor: "203.0.113.9", forwarded: "for=198.51.100.1")
        #expect(client == "192.0.2.7")
        #expect(TrustedProxies().client(peer: "127.0.0.1", forwardedFor: "203.0.113.9", forwarded: nil) == "127.0.0.1")
    }

    @Test func theClientIsTheRightMostHopThatIsNoTrustedProxy() {
        let trusted = Self.proxies
        #expect(trusted.client(peer: "127.0.0.1", forwardedFor: "203.0.113.9", forwarded: nil) == "203.0.113.9")
        // A client's own claim (left) is not believed; the hop the trusted proxies saw is.
        #expect(trusted.client(peer: "127.0.0.1", forwardedFor: "1.1.1.1, 203.0.113.9, 10.0.0.5", forwarded: nil)
                == "203.0.113.9")
        #expect(trusted.client(peer: "127.0.0.1", forwardedFor: " 198.51.100.4 ,10.1.1.1", forwarded: nil) == "198.51.100.4")
        // Every hop a trusted proxy: the left-most.
        #expect(trusted.client(peer: "127.0.0.1", forwardedFor: "10.0.0.9, 10.0.0.5", forwarded: nil) == "10.0.0.9")
        // No header: the proxy itself.
        #expect(trusted.client(peer: "127.0.0.1", forwardedFor: nil, forwarded: nil) == "127.0.0.1")
        #expect(trusted.client(peer: "127.0.0.1", forwardedFor: "", forwarded: nil) == "127.0.0.1")
    }

    @Test func aHopThatIsNoAddressEndsTheWalkAtTheNearestTrustedOne() {
        let trusted = Self.proxies
        #expect(trusted.client(peer: "127.0.0.1", forwardedFor: "garbage", forwarded: nil) == "127.0.0.1")
        #expect(trusted.client(peer: "127.0.0.1", forwardedFor: "203.0.113.9, unknown, 10.0.0.5", forwarded: nil) == "10.0.0.5")
    }

    @Test func hopsWithPortsAndBracketsAreReadAsTheirAddress() {
        #expect(TrustedProxies.address(of: "203.0.113.9:4711") == "203.0.113.9")
        #expect(TrustedProxies.address(of: "[2001:db8::1]:4711") == "2001:db8::1")
        #expect(TrustedProxies.address(of: "[2001:db8::1]") == "2001:db8::1")
        #expect(TrustedProxies.address(of: "2001:DB8:0::1") == "2001:db8::1")
        #expect(TrustedProxies.address(of: "_hidden") == nil)
    }

    @Test func forwardedGivesTheClientWhenThereIsNoXForwardedFor() {
        let trusted = Self.proxies
        #expect(trusted.client(peer: "127.0.0.1", forwardedFor: nil, forwarded: "for=203.0.113.9;proto=https") == "203.0.113.9")
        #expect(trusted.client(peer: "127.0.0.1", forwardedFor: nil,
                               forwarded: "for=\"[2001:db8::7]:4711\", for=10.0.0.5;by=10.0.0.1") == "2001:db8::7")
        #expect(trusted.client(peer: "127.0.0.1", forwardedFor: nil, forwarded: "proto=https;FOR=198.51.100.2") == "198.51.100.2")
        #expect(TrustedProxies.forValues("for=a, by=b, for=\"c\"") == ["a", "unknown", "c"])
        // X-Forwarded-For wins when both came.
        #expect(trusted.client(peer: "127.0.0.1", forwardedFor: "198.51.100.3", forwarded: "for=203.0.113.9") == "198.51.100.3")
    }
}
