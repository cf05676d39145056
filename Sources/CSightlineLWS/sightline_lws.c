// See include/sightline_lws.h for why each function exists.
#include "sightline_lws.h"
#include <string.h>
#include <stdlib.h>
#include <netinet/in.h>
#include <linux/tcp.h> // struct tcp_info with tcpi_bytes_received (glibc's lacks it)
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <errno.h>

int sl_lws_pre(void) { return LWS_PRE; }

struct lws_context *sl_lws_create_context(const char *iface, int port,
                                          lws_callback_function *callback,
                                          size_t rx_buffer, void *user,
                                          const char *cert_path,
                                          const char *key_path,
                                          int timeout_secs,
                                          int header_pool,
                                          int *bound_port,
                                          void **protocols_out) {
    // The protocols array must outlive the context; one per context. The
    // caller frees it (*protocols_out) after lws_context_destroy.
    struct lws_protocols *protocols = calloc(2, sizeof *protocols);
    if (!protocols) return NULL;
    protocols[0].name = "sightline";
    protocols[0].callback = callback;
    protocols[0].per_session_data_size = 0;
    protocols[0].rx_buffer_size = rx_buffer;

    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = port;
    info.iface = iface;
    info.protocols = protocols;
    info.gid = -1;
    info.uid = -1;
    info.options = LWS_SERVER_OPTION_VALIDATE_UTF8 | LWS_SERVER_OPTION_DISABLE_IPV6;
    info.timeout_secs = (unsigned int)timeout_secs; // each piece of a body within this
    info.timeout_secs_ah_idle = (unsigned int)timeout_secs; // headers within this (lws's default is 10 s)
    info.max_http_header_data = 16384; // request line and headers; StreamServer answers 414/431 past 8 KiB
    // Header buffers (made as needed, 16 KiB each) for requests being read, and
    // held by streams and uploads; StreamServer keeps the unfinished ones
    // under a share of it (evicting the oldest) and one address under 16.
    info.max_http_header_pool = (unsigned short)header_pool;
    info.vhost_name = "sightline";
    info.user = user;
    if (cert_path && key_path) {
        info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
        info.ssl_cert_filepath = cert_path;
        info.ssl_private_key_filepath = key_path;
        // HTTP/1.1 only (the server speaks nothing else): never offer h2.
        info.alpn = "http/1.1";
    }

    struct lws_context *context = lws_create_context(&info);
    if (!context) { free(protocols); return NULL; }
    struct lws_vhost *vhost = lws_get_vhost_by_name(context, "sightline");
    if (bound_port) *bound_port = vhost ? lws_get_vhost_listen_port(vhost) : port;
    if (protocols_out) *protocols_out = protocols;
    return context;
}

int sl_lws_write_http_head(struct lws *wsi, unsigned int status,
                           const char *content_type, int64_t content_length,
                           const char *const *names, const char *const *values,
                           int count) {
    unsigned char buffer[LWS_PRE + 4096];
    unsigned char *start = buffer + LWS_PRE, *p = start, *end = buffer + sizeof buffer - 1;
    lws_filepos_t length = content_length < 0 ? LWS_ILLEGAL_HTTP_CONTENT_LEN : (lws_filepos_t)content_length;
    if (lws_add_http_common_headers(wsi, status, content_type, length, &p, end)) return -1;
    for (int i = 0; i < count; i++) {
        if (lws_add_http_header_by_name(wsi, (const unsigned char *)names[i],
                                        (const unsigned char *)values[i],
                                        (int)strlen(values[i]), &p, end)) return -1;
    }
    if (lws_finalize_write_http_header(wsi, start, &p, end)) return -1;
    return 0;
}

void sl_lws_set_logging(int levels, void (*emit)(int level, const char *line)) {
    lws_set_log_level(levels, emit);
}

static int tcp_info_of(int fd, struct tcp_info *info) {
    socklen_t length = sizeof *info;
    memset(info, 0, sizeof *info);
    return getsockopt(fd, IPPROTO_TCP, TCP_INFO, info, &length);
}

int sl_socket_quiet_ms(int fd) {
    int unread = 0;
    if (ioctl(fd, FIONREAD, &unread) != 0 || unread > 0) return -1;
    struct tcp_info info;
    if (tcp_info_of(fd, &info) != 0) return -1;
    return (int)info.tcpi_last_data_recv;
}

int64_t sl_socket_bytes_received(int fd) {
    struct tcp_info info;
    if (tcp_info_of(fd, &info) != 0) return -1;
    return (int64_t)info.tcpi_bytes_received;
}

// TCP_ESTABLISHED of the kernel's tcp_states.h (netinet/tcp.h has it too, but
// clashes with linux/tcp.h, included above for tcpi_bytes_received).
#define SL_TCP_ESTABLISHED 1

int sl_socket_peer_gone(int fd) {
    struct tcp_info info;
    if (tcp_info_of(fd, &info) == 0) return info.tcpi_state != SL_TCP_ESTABLISHED;
    char byte;
    ssize_t got = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (got == 0) return 1;
    return got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}
