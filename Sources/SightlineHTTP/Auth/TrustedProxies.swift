import Foundation

/// The reverse proxies whose word about a client's address is taken
/// (`access.trustedProxies`: addresses and CIDR blocks, IPv4 and IPv6), and
/// that word read: behind nginx, Caddy or Home Assistant's ingress every
/// connection comes from the proxy, so limits, lockouts and logs need the
/// address the proxy forwards.
///
/// A connection from a trusted proxy is exempt from the per-address limit on
/// unfinished connections (the global one still applies); once its headers
/// are in, the client is the right-most `X-Forwarded-For` entry that is not
/// itself a trusted proxy (each proxy appends the address it was reached
/// from, so entries left of the first untrusted one are the client's own
/// claims), or with no `X-Forwarded-For`, the same walk over `Forwarded`'s
/// `for=` values. Headers from a peer that is not trusted are ignored.
///
/// Any thread (pure; `Sendable` value).
public struct TrustedProxies: Sendable, Equatable {
    /// One address or block: the network's bytes (4 for IPv4, 16 for IPv6) and its prefix length.
    struct Block: Sendable, Equatable {
        var network: [UInt8]
        var prefix: Int

        func contains(_ address: [UInt8]) -> Bool {
            guard address.count == network.count else { return false }
            var left = prefix
            for (a, n) in zip(address, network) {
                guard left > 0 else { return true }
                let bits = min(8, left)
                let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
                if a & mask != n & mask { return false }
                left -= bits
            }
            return true
        }
    }

    public struct Invalid: Error, CustomStringConvertible, Equatable {
        public let entry: String
        public var description: String {
            "access.trustedProxies: '\(entry)' is not an IPv4 or IPv6 address or CIDR block (such as 127.0.0.1, 10.0.0.0/8, fd00::/8)"
        }
    }

    let blocks: [Block]

    /// No proxy is trusted.
    public init() { blocks = [] }

    /// Each entry an address (`127.0.0.1`, `::1`) or a CIDR block (`10.0.0.0/8`, `fd00::/8`).
    public init(_ entries: [String]) throws {
        blocks = try entries.map { entry in
            let text = entry.trimmingCharacters(in: .whitespaces)
            let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            guard let bytes = Self.bytes(of: String(parts[0])) else { throw Invalid(entry: entry) }
            let written = String(parts[0]).contains(":") ? 128 : 32
            var prefix = bytes.count * 8
            if parts.count == 2 {
                guard parts[1].allSatisfy({ "0123456789".contains($0) }), let given = Int(parts[1]), given <= written else {
                    throw Invalid(entry: entry)
                }
                // An IPv4-mapped IPv6 block (::ffff:10.0.0.0/104) is kept as the IPv4 block it names.
                prefix = bytes.count == 4 ? max(0, given - (written - 32)) : given
            }
            return Block(network: bytes, prefix: prefix)
        }
    }

    public var isEmpty: Bool { blocks.isEmpty }

    /// Whether `address` (numeric, as the socket gives it) is a trusted proxy.
    public func contains(_ address: String) -> Bool {
        guard !blocks.isEmpty, let bytes = Self.bytes(of: address) else { return false }
        return blocks.contains { $0.contains(bytes) }
    }

    /// The client's address for a request that came from `peer` with these
    /// headers' values (nil when absent): `peer` itself unless it is trusted.
    public func client(peer: String, forwardedFor: String?, forwarded: String?) -> String {
        guard contains(peer) else { return peer }
        let hops: [String]
        if let forwardedFor, !forwardedFor.trimmingCharacters(in: .whitespaces).isEmpty {
            hops = forwardedFor.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        } else if let forwarded {
            hops = Self.forValues(forwarded)
        } else {
            return peer
        }
        // From the right: the first hop that is not a trusted proxy is the client. A hop
        // that is no address (garbage, "unknown", an obfuscated name) ends the walk at the
        // nearest hop known to be a trusted proxy: nothing left of it can be believed.
        var nearest = peer
        for hop in hops.reversed() {
            guard let address = Self.address(of: hop) else { return nearest }
            if !contains(address) { return address }
            nearest = address
        }
        return nearest
    }

    /// The `for=` values of a `Forwarded` header (RFC 7239), in order: elements are
    /// separated by commas, pairs by semicolons; values may be quoted.
    static func forValues(_ header: String) -> [String] {
        header.split(separator: ",").compactMap { element in
            for pair in element.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces).lowercased() == "for" else { continue }
                var value = parts[1].trimmingCharacters(in: .whitespaces)
                if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
                return value
            }
            return "unknown"
        }
    }

    /// The numeric address in a forwarded hop: `1.2.3.4`, `1.2.3.4:5678`,
    /// `::1`, `[::1]`, `[::1]:5678`; nil when it is none.
    static func address(of hop: String) -> String? {
        var text = hop
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            text = String(text[text.index(after: text.startIndex)..<close])
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            text = String(text[..<colon])
        }
        guard let bytes = bytes(of: text) else { return nil }
        return numeric(bytes)
    }

    /// The address's bytes (4 for IPv4 and IPv4-mapped IPv6, else 16); nil when it is not a numeric address.
    static func bytes(of text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF { return Array(bytes[12...]) }
        return bytes
    }

    /// The canonical text of an address's bytes.
    static func numeric(_ bytes: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        var copy = bytes
        _ = inet_ntop(bytes.count == 4 ? AF_INET : AF_INET6, &copy, &buffer, socklen_t(buffer.count))
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
