// See include/sightline_tls.h for why each function exists.
#include "sightline_tls.h"

#include <limits.h>
#include <openssl/asn1.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Fills err with `what` and the oldest error on this thread's OpenSSL queue
// (the cause; later ones are the callers' reports of it), then empties the
// queue. Returns -1, for `return fail(...)`.
static int fail(sl_tls_error *err, const char *what, ...) {
    char context[240];
    va_list args;
    va_start(args, what);
    vsnprintf(context, sizeof context, what, args);
    va_end(args);
    unsigned long code = ERR_get_error();
    err->code = code;
    if (code != 0) {
        char text[256];
        ERR_error_string_n(code, text, sizeof text);
        snprintf(err->message, sizeof err->message, "%s: %s", context, text);
    } else {
        snprintf(err->message, sizeof err->message, "%s", context);
    }
    ERR_clear_error();
    return -1;
}

// A passphrase callback that has none to give: without it OpenSSL would ask
// on the terminal for an encrypted key. Sets *(int *)user to say it was asked.
static int no_passphrase(char *buffer, int size, int writing, void *user) {
    (void)buffer, (void)size, (void)writing;
    if (user) *(int *)user = 1;
    return -1;
}

static BIO *memory_reader(const char *bytes, size_t length) {
    return length > INT_MAX ? NULL : BIO_new_mem_buf(bytes, (int)length);
}

static X509 *read_certificate(const char *pem, size_t length) {
    BIO *bio = memory_reader(pem, length);
    X509 *certificate = bio ? PEM_read_bio_X509(bio, NULL, no_passphrase, NULL) : NULL;
    BIO_free(bio);
    return certificate;
}

static EVP_PKEY *read_private_key(const char *pem, size_t length, int *encrypted) {
    BIO *bio = memory_reader(pem, length);
    EVP_PKEY *key = bio ? PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, encrypted) : NULL;
    BIO_free(bio);
    return key;
}

// A memory BIO's contents as a NUL-terminated string to free() (NULL when out of memory).
static char *bio_text(BIO *bio) {
    char *data = NULL;
    long length = BIO_get_mem_data(bio, &data);
    char *text = length >= 0 ? malloc((size_t)length + 1) : NULL;
    if (text) {
        memcpy(text, data, (size_t)length);
        text[length] = 0;
    }
    return text;
}

static int add_extension(X509 *certificate, X509V3_CTX *context, int nid, const char *value) {
    X509_EXTENSION *extension = X509V3_EXT_nconf_nid(NULL, context, nid, value);
    if (!extension) return 0;
    int added = X509_add_ext(certificate, extension, -1);
    X509_EXTENSION_free(extension);
    return added;
}

// The subjectAltName entries; NULL with err filled when one cannot be made.
static GENERAL_NAMES *alt_names(const char *const *dns_names, int dns_count,
                                const char *const *ip_addresses, int ip_count, sl_tls_error *err) {
    GENERAL_NAMES *names = sk_GENERAL_NAME_new_null();
    if (!names) return fail(err, "making the alternative names"), NULL;
    for (int i = 0; i < dns_count + ip_count; i++) {
        GENERAL_NAME *name = GENERAL_NAME_new();
        if (!name) goto failed;
        if (i < dns_count) {
            ASN1_IA5STRING *text = ASN1_IA5STRING_new();
            if (!text || !ASN1_STRING_set(text, dns_names[i], -1)) {
                ASN1_IA5STRING_free(text);
                GENERAL_NAME_free(name);
                goto failed;
            }
            GENERAL_NAME_set0_value(name, GEN_DNS, text);
        } else {
            const char *address = ip_addresses[i - dns_count];
            ASN1_OCTET_STRING *bytes = a2i_IPADDRESS(address);
            if (!bytes) {
                GENERAL_NAME_free(name);
                sk_GENERAL_NAME_pop_free(names, GENERAL_NAME_free);
                return fail(err, "not an IP address: %s", address), NULL;
            }
            GENERAL_NAME_set0_value(name, GEN_IPADD, bytes);
        }
        if (!sk_GENERAL_NAME_push(names, name)) {
            GENERAL_NAME_free(name);
            goto failed;
        }
    }
    return names;
failed:
    sk_GENERAL_NAME_pop_free(names, GENERAL_NAME_free);
    return fail(err, "making the alternative names"), NULL;
}

int sl_tls_make_self_signed(const char *common_name, const char *organization,
                            const char *const *dns_names, int dns_count,
                            const char *const *ip_addresses, int ip_count,
                            int64_t not_before, int64_t not_after,
                            char **cert_pem, char **key_pem, sl_tls_error *err) {
    ERR_clear_error();
    *cert_pem = NULL;
    *key_pem = NULL;
    int status = -1;
    const char *step = "making the P-256 key";
    X509 *certificate = NULL;
    BIGNUM *serial = NULL;
    GENERAL_NAMES *names = NULL;
    BIO *cert_bio = NULL, *key_bio = NULL;

    EVP_PKEY *key = EVP_EC_gen("P-256");
    if (!key) goto done;

    step = "making the certificate";
    certificate = X509_new();
    serial = BN_new();
    if (!certificate || !serial || !X509_set_version(certificate, X509_VERSION_3)) goto done;
    // 159 random bits with the top one set: positive, never zero, at most 20 bytes (RFC 5280).
    if (!BN_rand(serial, 159, BN_RAND_TOP_ONE, BN_RAND_BOTTOM_ANY)
        || !BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(certificate))) goto done;
    if (!ASN1_TIME_set(X509_getm_notBefore(certificate), (time_t)not_before)
        || !ASN1_TIME_set(X509_getm_notAfter(certificate), (time_t)not_after)) goto done;
    X509_NAME *subject = X509_get_subject_name(certificate);
    if (!X509_NAME_add_entry_by_NID(subject, NID_commonName, MBSTRING_UTF8,
                                    (const unsigned char *)common_name, -1, -1, 0)
        || !X509_NAME_add_entry_by_NID(subject, NID_organizationName, MBSTRING_UTF8,
                                       (const unsigned char *)organization, -1, -1, 0)
        || !X509_set_issuer_name(certificate, subject)
        || !X509_set_pubkey(certificate, key)) goto done;

    step = "adding the extensions";
    X509V3_CTX context;
    X509V3_set_ctx_nodb(&context);
    X509V3_set_ctx(&context, certificate, certificate, NULL, NULL, 0);
    if (!add_extension(certificate, &context, NID_basic_constraints, "critical,CA:TRUE,pathlen:0")
        || !add_extension(certificate, &context, NID_key_usage, "critical,digitalSignature,keyCertSign")
        || !add_extension(certificate, &context, NID_ext_key_usage, "serverAuth")) goto done;
    names = alt_names(dns_names, dns_count, ip_addresses, ip_count, err);
    if (!names) {
        step = NULL;  // err is filled
        goto done;
    }
    if (sk_GENERAL_NAME_num(names) > 0
        && !X509_add1_ext_i2d(certificate, NID_subject_alt_name, names, 0, X509V3_ADD_DEFAULT)) goto done;

    step = "signing the certificate";
    if (!X509_sign(certificate, key, EVP_sha256())) goto done;

    step = "writing PEM";
    cert_bio = BIO_new(BIO_s_mem());
    key_bio = BIO_new(BIO_s_mem());
    if (!cert_bio || !key_bio || !PEM_write_bio_X509(cert_bio, certificate)
        || !PEM_write_bio_PrivateKey(key_bio, key, NULL, NULL, 0, NULL, NULL)) goto done;
    *cert_pem = bio_text(cert_bio);
    *key_pem = bio_text(key_bio);
    if (!*cert_pem || !*key_pem) {
        free(*cert_pem);
        free(*key_pem);
        *cert_pem = *key_pem = NULL;
        step = "out of memory";
        goto done;
    }
    status = 0;
done:
    if (status != 0 && step) fail(err, "%s", step);
    BIO_free(cert_bio);
    BIO_free(key_bio);
    if (names) sk_GENERAL_NAME_pop_free(names, GENERAL_NAME_free);
    BN_free(serial);
    X509_free(certificate);
    EVP_PKEY_free(key);
    ERR_clear_error();
    return status;
}

// What an sl_tls_certificate's pointers point into.
struct certificate_owner {
    X509 *certificate;
    GENERAL_NAMES *names;
    sl_tls_alt_name *list;
};

int sl_tls_certificate_read(const char *pem, size_t length, sl_tls_certificate *out, sl_tls_error *err) {
    ERR_clear_error();
    memset(out, 0, sizeof *out);
    struct certificate_owner *owner = calloc(1, sizeof *owner);
    if (!owner) return fail(err, "out of memory");
    out->owner = owner;

    owner->certificate = read_certificate(pem, length);
    if (!owner->certificate) {
        fail(err, "reading the certificate");
        sl_tls_certificate_release(out);
        return -1;
    }

    ASN1_TIME *epoch = ASN1_TIME_set(NULL, 0);
    int days = 0, seconds = 0;
    int timed = epoch && ASN1_TIME_diff(&days, &seconds, epoch, X509_get0_notAfter(owner->certificate));
    ASN1_TIME_free(epoch);
    unsigned int digest_length = 0;
    if (!timed || !X509_digest(owner->certificate, EVP_sha256(), out->sha256, &digest_length)
        || digest_length != sizeof out->sha256) {
        fail(err, timed ? "hashing the certificate" : "reading the certificate's notAfter time");
        sl_tls_certificate_release(out);
        return -1;
    }
    out->not_after = (int64_t)days * 86400 + seconds;

    // No subjectAltName, or one that does not decode, reads as no names (as a
    // TLS client would take it): such a certificate covers nothing.
    owner->names = X509_get_ext_d2i(owner->certificate, NID_subject_alt_name, NULL, NULL);
    int count = owner->names ? sk_GENERAL_NAME_num(owner->names) : 0;
    owner->list = calloc(count > 0 ? (size_t)count : 1, sizeof *owner->list);
    if (!owner->list) {
        fail(err, "out of memory");
        sl_tls_certificate_release(out);
        return -1;
    }
    for (int i = 0; i < count; i++) {
        int type = 0;
        ASN1_STRING *value = GENERAL_NAME_get0_value(sk_GENERAL_NAME_value(owner->names, i), &type);
        if (!value || (type != GEN_DNS && type != GEN_IPADD)) continue;
        sl_tls_alt_name *name = &owner->list[out->alt_name_count++];
        name->kind = type == GEN_DNS ? SL_TLS_NAME_DNS : SL_TLS_NAME_IP;
        name->bytes = ASN1_STRING_get0_data(value);
        name->length = (size_t)ASN1_STRING_length(value);
    }
    out->alt_names = owner->list;
    ERR_clear_error();
    return 0;
}

void sl_tls_certificate_release(sl_tls_certificate *certificate) {
    struct certificate_owner *owner = certificate->owner;
    if (owner) {
        X509_free(owner->certificate);
        if (owner->names) GENERAL_NAMES_free(owner->names);
        free(owner->list);
        free(owner);
    }
    memset(certificate, 0, sizeof *certificate);
}

int sl_tls_private_key_matches(const char *key_pem, size_t key_length,
                               const char *cert_pem, size_t cert_length,
                               int *matches, sl_tls_error *err) {
    ERR_clear_error();
    *matches = 0;
    X509 *certificate = read_certificate(cert_pem, cert_length);
    if (!certificate) return fail(err, "reading the certificate");
    int encrypted = 0;
    EVP_PKEY *key = read_private_key(key_pem, key_length, &encrypted);
    if (!key) {
        X509_free(certificate);
        return fail(err, encrypted ? "the private key is encrypted; the server needs it unencrypted"
                                   : "reading the private key");
    }
    // 1 when equal; 0 when not, negative for keys of different types: both a mismatch.
    EVP_PKEY *public_key = X509_get0_pubkey(certificate);
    *matches = public_key && EVP_PKEY_eq(public_key, key) == 1;
    EVP_PKEY_free(key);
    X509_free(certificate);
    ERR_clear_error();
    return 0;
}

int sl_tls_sha256(const void *bytes, size_t length, uint8_t out[32], sl_tls_error *err) {
    ERR_clear_error();
    static const uint8_t nothing = 0;
    if (!EVP_Digest(length ? bytes : &nothing, length, out, NULL, EVP_sha256(), NULL)) {
        return fail(err, "SHA-256");
    }
    return 0;
}
