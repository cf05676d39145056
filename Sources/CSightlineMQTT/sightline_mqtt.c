// See include/sightline_mqtt.h for why each function exists.
#include "sightline_mqtt.h"
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <sys/eventfd.h>

int slmqtt_wake_open(void) {
    return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

void slmqtt_wake_signal(int wake_fd) {
    // EAGAIN only when the counter is at its maximum: the thread is awake anyway.
    (void)eventfd_write(wake_fd, 1);
}

int slmqtt_wait(struct mosquitto *mosq, int wake_fd, int timeout_ms) {
    struct pollfd fds[2];
    int count = 0;
    fds[count].fd = wake_fd;
    fds[count].events = POLLIN;
    fds[count].revents = 0;
    count++;
    int sock = mosq ? mosquitto_socket(mosq) : -1;
    if (sock >= 0) {
        fds[count].fd = sock;
        fds[count].events = POLLIN | (mosquitto_want_write(mosq) ? POLLOUT : 0);
        fds[count].revents = 0;
        count++;
    }
    int ready = poll(fds, (nfds_t)count, timeout_ms);
    if (ready < 0) return errno == EINTR ? 0 : -errno;
    int flags = 0;
    if (fds[0].revents & POLLIN) {
        eventfd_t value;
        (void)eventfd_read(wake_fd, &value);
        flags |= SLMQTT_WOKEN;
    }
    if (count > 1) {
        if (fds[1].revents & POLLIN) flags |= SLMQTT_READABLE;
        if (fds[1].revents & POLLOUT) flags |= SLMQTT_WRITABLE;
        if (fds[1].revents & (POLLERR | POLLHUP | POLLNVAL)) flags |= SLMQTT_HANGUP;
    }
    return flags;
}
