import CSightlineLWS
import Foundation
import SightlineSupport

/// What libwebsockets parsed of a request, read out of it: the method, the
/// decoded path and query, the headers by name, the peer's address; and the
/// size limits on the URL and headers. The readers take a `wsi` and run on
/// the service thread inside a callback for it; the rest is pure.
enum RequestHeaders {
    /// Any thread (pure).
    static func method(_ index: Int32) -> HTTPRequest.Method {
        switch index {
        case Int32(LWSHUMETH_GET): return .get
        case Int32(LWSHUMETH_POST): return .post
        case Int32(LWSHUMETH_PUT): return .put
        case Int32(LWSHUMETH_PATCH): return .patch
        case Int32(LWSHUMETH_DELETE): return .delete
        case Int32(LWSHUMETH_OPTIONS): return .options
        case Int32(LWSHUMETH_HEAD): return .head
        default: return .other
        }
    }

    /// Service thread (inside a callback for `wsi`): the method, and the URI's length.
    static func method(of wsi: OpaquePointer) -> (method: HTTPRequest.Method, uriLength: Int) {
        var uri: UnsafeMutablePointer<CChar>?
        var uriLength: Int32 = 0
        let methodIndex = lws_http_get_uri_and_method(wsi, &uri, &uriLength)
        return (method(methodIndex), Int(uriLength))
    }

    /// Service thread (inside a callback for `wsi`): the decoded path.
    static func path(_ wsi: OpaquePointer) -> String {
        let length = Int(lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI))
        guard length > 0 else { return "" }
        var buffer = [CChar](repeating: 0, count: length + 1)
        guard lws_hdr_copy(wsi, &buffer, Int32(buffer.count), WSI_TOKEN_GET_URI) > 0 else { return "" }
        return String(cChars: buffer)
    }

    /// Service thread (inside a callback for `wsi`): the query, as lws
    /// decoded it (%xx, and + as a space), each `name=value` in full.
    static func query(_ wsi: OpaquePointer) -> [String: String] {
        var result: [String: String] = [:]
        var index: Int32 = 0
        while index < 32 {
            // Each buffer fits its fragment: a fixed one made lws refuse a
            // longer argument, which silently ended the query there.
            var buffer = [CChar](repeating: 0, count: Int(lws_hdr_fragment_length(wsi, WSI_TOKEN_HTTP_URI_ARGS, index)) + 1)
            guard lws_hdr_copy_fragment(wsi, &buffer, Int32(buffer.count), WSI_TOKEN_HTTP_URI_ARGS, index) >= 0 else { break }
            let fragment = String(cChars: buffer)
            if let equals = fragment.firstIndex(of: "=") {
                result[String(fragment[..<equals])] = String(fragment[fragment.index(after: equals)...])
            } else if !fragment.isEmpty {
                result[fragment] = ""
            }
            index += 1
        }
        return result
    }

    /// Service thread (inside a callback for `wsi`): every header libwebsockets parsed into one of its known tokens, by
    /// lowercase name without the colon, plus `customHeaders` (libwebsockets 4.1
    /// keeps headers it does not know only for lookup by name).
    static func headers(_ wsi: OpaquePointer) -> [String: String] {
        var result: [String: String] = [:]
        var buffer = [CChar](repeating: 0, count: 4096)
        for index in 0..<Int(WSI_TOKEN_COUNT.rawValue) {
            let token = lws_token_indexes(rawValue: UInt32(index))
            let total = lws_hdr_total_length(wsi, token)
            guard total > 0, let raw = lws_token_to_string(token) else { continue }
            let name = String(cString: raw)
            guard name.hasSuffix(":"), !name.hasPrefix(":") else { continue }
            if Int(total) + 1 > buffer.count { buffer = [CChar](repeating: 0, count: Int(total) + 1) }
            guard lws_hdr_copy(wsi, &buffer, Int32(buffer.count), token) >= 0 else { continue }
            result[String(name.dropLast()).lowercased()] = String(cChars: buffer)
        }
        // Headers lws has no token for, looked up by name: the ones a handler reads.
        for name in customHeaders {
            for spelling in [name, name.split(separator: "-").map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined(separator: "-")] {
                let key = spelling + ":"
                let length = lws_hdr_custom_length(wsi, key, Int32(key.utf8.count))
                guard length > 0, length < 1024 else { continue }
                if Int(length) + 1 > buffer.count { buffer = [CChar](repeating: 0, count: Int(length) + 1) }
                guard lws_hdr_custom_copy(wsi, &buffer, Int32(buffer.count), key, Int32(key.utf8.count)) >= 0 else { continue }
                result[name] = String(cChars: buffer)
                break
            }
        }
        return result
    }

    /// Headers without an lws token that handlers read (AuthGuard: whether a
    /// browser script asked; `client`: RFC 7239's Forwarded from a trusted proxy).
    static let customHeaders = ["sec-fetch-mode", "forwarded"]

    /// Service thread (inside a callback for `wsi`): the peer's address.
    static func peer(_ wsi: OpaquePointer) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        guard lws_get_peer_simple(wsi, &buffer, buffer.count) != nil else { return "" }
        return String(cChars: buffer)
    }

    /// Service thread (inside a callback for `wsi`): the client's address: the
    /// peer's, or from a trusted reverse proxy the one it forwards (`headers` are the request's).
    static func client(_ wsi: OpaquePointer, headers: [String: String], trusted: TrustedProxies) -> String {
        let peer = peer(wsi)
        guard !trusted.isEmpty else { return peer }
        return trusted.client(peer: peer, forwardedFor: headers["x-forwarded-for"], forwarded: headers["forwarded"])
    }

    /// URLs and header sections a request may have. libwebsockets holds up to
    /// `sightline_lws.c`'s 16 KiB of request line and headers; what fits but
    /// is larger than these gets 414 or 431 (beyond 16 KiB lws closes the
    /// connection before any callback: it has no hook there).
    static let maxURIBytes = 8192
    static let maxHeaderBytes = 8192

    /// 414 for a long URL, 431 for large headers, else nil. Headers count as the
    /// larger of those lws has a token for and `arrivedBytes` (what came over
    /// the socket for a bodiless request, less its request line: headers lws
    /// keeps only by name, which cannot be added up otherwise).
    static func sizeRefusal(uriBytes: Int, headers: [String: String], arrivedBytes: Int? = nil) -> HTTPResponse? {
        if uriBytes > maxURIBytes {
            return .error(414, "URI too long", detail: "\(uriBytes) bytes of path and query; the limit is \(maxURIBytes)")
        }
        let known = headers.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count + 4 }
        let headerBytes = max(known, arrivedBytes ?? 0)
        if headerBytes > maxHeaderBytes {
            return .error(431, "request header fields too large",
                          detail: "\(headerBytes) bytes of headers; the limit is \(maxHeaderBytes)")
        }
        return nil
    }
}

extension String {
    /// From a NUL-terminated C buffer.
    init(cChars buffer: [CChar]) {
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        self.init(decoding: bytes, as: UTF8.self)
    }
}
