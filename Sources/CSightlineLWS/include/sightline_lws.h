// sightline_lws.h: what Swift cannot do with libwebsockets by itself.
//
// Why it exists: LWS_PRE is a computed macro, the context-creation struct
// wants a protocols array that outlives the context, and header writing
// goes through unsigned char ** cursors. Everything else in libwebsockets
// (lws_write, lws_service, lws_callback_on_writable, ...) Swift calls
// directly; the server's logic lives in Swift (Sources/SightlineCore/Server).
#ifndef SIGHTLINE_LWS_H
#define SIGHTLINE_LWS_H

#include <libwebsockets.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// The headroom lws_write() needs before the payload.
int sl_lws_pre(void);

// Creates a context with one vhost listening on iface:port (port 0 picks a
// free one) and one protocol, "sightline", that receives both HTTP and
// WebSocket callbacks. rx_buffer bounds a single WebSocket receive.
// `user` is what lws_context_user() gives back in callbacks.
// With cert_path and key_path (PEM files; NULL for plain HTTP), the vhost
// serves HTTPS and WSS on the same port (OpenSSL, as libwebsockets is built).
// timeout_secs bounds how long lws waits for a request's headers and for
// each piece of its body (lws's own timeouts; StreamServer replaces the
// one lws arms after the headers while a request waits for the worker).
// header_pool caps lws's header buffers (max_http_header_pool): every
// connection holds one until its headers are read (and an HTTP stream or
// upload for its whole exchange); connections beyond it wait for one.
// Returns NULL on failure. *bound_port receives the port actually bound.
struct lws_context *sl_lws_create_context(const char *iface, int port,
                                          lws_callback_function *callback,
                                          size_t rx_buffer, void *user,
                                          const char *cert_path,
                                          const char *key_path,
                                          int timeout_secs,
                                          int header_pool,
                                          int *bound_port,
                                          void **protocols_out);

// Writes an HTTP response head: status, content type, content length
// (negative: none, the connection closes after the body) and `count`
// extra headers (names end in ':'). Returns 0 on success.
int sl_lws_write_http_head(struct lws *wsi, unsigned int status,
                           const char *content_type, int64_t content_length,
                           const char *const *names, const char *const *values,
                           int count);

// Milliseconds since the socket last received data, or -1 when it has
// bytes not read yet (or is not TCP). Why: Swift's Glibc module does not
// carry netinet/tcp.h's struct tcp_info; StreamServer uses it to tell a
// request whose headers stopped coming (see its stalled-header check).
int sl_socket_quiet_ms(int fd);

// Bytes the socket has received in its life (TCP_INFO's tcpi_bytes_received),
// or -1. Why: libwebsockets 4.1 keeps headers it has no token for only for
// lookup by name, so their size cannot be added up from the headers;
// StreamServer measures a bodiless request by what arrived for it.
int64_t sl_socket_bytes_received(int fd);

// 1 when the peer of this connected TCP socket has closed or reset it (its
// state is no longer ESTABLISHED: CLOSE-WAIT after its FIN, CLOSE after a
// reset), else 0; without TCP_INFO, a MSG_PEEK read of 0 or a hard error. Why:
// libwebsockets 4.1 does not read a socket whose HTTP answer is still being
// written, so the end of an endless one (an MJPEG stream waiting for frames)
// goes unnoticed until a write fails; StreamServer asks this on a timer
// (DepartureWatch). The state reads the FIN even behind unread bytes.
int sl_socket_peer_gone(int fd);

// Routes lws's own log lines to `emit` at the given level mask.
void sl_lws_set_logging(int levels, void (*emit)(int level, const char *line));

#ifdef __cplusplus
}
#endif
#endif
