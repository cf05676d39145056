// sightline_tls.h: the few things Sightline asks of OpenSSL's libcrypto.
//
// Why it exists: libwebsockets already brings OpenSSL (Debian builds it with
// OpenSSL), so the self-signed certificate of `tls: auto`, reading the
// certificate files, the key check before a reload and the tokens' SHA-256 use
// it too rather than a second TLS stack compiled from source. OpenSSL's API is
// macros, stacks and ownership rules Swift should not see, so Swift calls only
// the functions below, and this header does not include OpenSSL's.
//
// Every function that can fail returns 0 when fine and -1 otherwise, with
// OpenSSL's error code and text (ERR_error_string_n) in `err`; Swift turns that
// into a thrown error in exactly one place (OpenSSLError.swift). Each function
// leaves the calling thread's OpenSSL error queue empty, because the lws service
// thread calls some of them and lws reads that queue after its own TLS calls.
#ifndef SIGHTLINE_TLS_H
#define SIGHTLINE_TLS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl_tls_error {
    unsigned long code;  // OpenSSL's packed error code; 0 when the failure is the shim's own
    char message[512];
} sl_tls_error;

// Makes an ECDSA P-256 key and a self-signed X.509 v3 certificate for it:
// subject and issuer CN=common_name, O=organization; a random 159-bit serial;
// valid from not_before to not_after (Unix seconds); basicConstraints
// CA:TRUE pathlen:0 and keyUsage digitalSignature, keyCertSign (both
// critical), extendedKeyUsage serverAuth, and subjectAltName with the DNS
// names and the IP addresses (text, IPv4 or IPv6), signed with SHA-256.
// Exists because building a certificate takes some thirty OpenSSL calls
// whose objects each have their own free function.
// On success *cert_pem and *key_pem (PKCS#8, unencrypted) are NUL-terminated
// PEM text that the caller frees with free(); the caller writes the files.
int sl_tls_make_self_signed(const char *common_name, const char *organization,
                            const char *const *dns_names, int dns_count,
                            const char *const *ip_addresses, int ip_count,
                            int64_t not_before, int64_t not_after,
                            char **cert_pem, char **key_pem, sl_tls_error *err);

// A subject alternative name of a certificate.
enum {
    SL_TLS_NAME_DNS = 1,  // bytes: the name's text (not NUL-terminated)
    SL_TLS_NAME_IP = 2,   // bytes: the address, 4 (IPv4) or 16 (IPv6) bytes
};
typedef struct sl_tls_alt_name {
    int kind;  // SL_TLS_NAME_*
    const uint8_t *bytes;
    size_t length;
} sl_tls_alt_name;

// What Sightline reads from a certificate. The pointers belong to `owner`
// until sl_tls_certificate_release.
typedef struct sl_tls_certificate {
    int64_t not_after;                 // Unix seconds
    uint8_t sha256[32];                // of the DER: the fingerprint browsers show
    const sl_tls_alt_name *alt_names;  // DNS names and IP addresses only, in order
    int alt_name_count;
    void *owner;
} sl_tls_certificate;

// Reads the first certificate of PEM text (a chain starts with the server's
// own). Exists because the notAfter time, the alternative names and the DER
// are behind ASN1_TIME, GENERAL_NAMES stacks and i2d calls.
int sl_tls_certificate_read(const char *pem, size_t length, sl_tls_certificate *out, sl_tls_error *err);

// Frees what sl_tls_certificate_read allocated (a zeroed struct is fine).
void sl_tls_certificate_release(sl_tls_certificate *certificate);

// Whether the private key in key_pem (PEM, unencrypted: there is nobody to
// ask for a passphrase) is the one of the first certificate in cert_pem:
// *matches is 1 or 0. Fails when either does not parse. Exists because a
// reload that hands lws a certificate and a key that do not belong together
// is taken, and then every new handshake fails.
int sl_tls_private_key_matches(const char *key_pem, size_t key_length,
                               const char *cert_pem, size_t cert_length,
                               int *matches, sl_tls_error *err);

// SHA-256 of `length` bytes into out (32 bytes). Exists for the tokens'
// digests, which need nothing else of a crypto library. Fails only when
// OpenSSL cannot allocate.
int sl_tls_sha256(const void *bytes, size_t length, uint8_t out[32], sl_tls_error *err);

#ifdef __cplusplus
}
#endif
#endif
