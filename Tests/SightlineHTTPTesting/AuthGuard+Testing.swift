import SightlineHTTP

extension AuthGuard {
    /// What the tests use: one admin token, "s3cret", viewing open (loopback).
    package static func testing(viewOpen: Bool = true) -> AuthGuard {
        AuthGuard(tokens: TokenStore(fixed: [(name: "config", role: .admin, token: "s3cret")]),
                  policy: AccessPolicy(viewOpen: viewOpen, loopbackBound: true))
    }
}
