// sightline_mqtt.h: libmosquitto for Swift, and what Swift cannot do beside it.
//
// libmosquitto's own API (mosquitto_new, _connect_async, _publish, the
// callbacks, ...) imports into Swift as it is and Swift calls it directly
// (Sources/SightlineCore/MQTT/MQTTConnection.swift). The publisher runs
// libmosquitto's "external loop" on a thread of its own, so it needs to wait
// on the client's socket and on a wake-up from other threads at once; the
// functions below exist for that, each for the reason given beside it.
#ifndef SIGHTLINE_MQTT_H
#define SIGHTLINE_MQTT_H

#include <mosquitto.h>

#ifdef __cplusplus
extern "C" {
#endif

// A non-blocking eventfd for waking the publisher's thread. Exists because
// Swift's Glibc module does not import <sys/eventfd.h>. Returns -1 (errno
// set) on failure.
int slmqtt_wake_open(void);

// Adds one to the eventfd (any thread; never blocks). Exists with
// slmqtt_wake_open: eventfd_write is in the same header Swift cannot see.
void slmqtt_wake_signal(int wake_fd);

// What slmqtt_wait saw; or-ed together.
enum {
    SLMQTT_READABLE = 1,  // the client's socket has bytes: call mosquitto_loop_read
    SLMQTT_WRITABLE = 2,  // it can take the bytes libmosquitto has queued: mosquitto_loop_write
    SLMQTT_WOKEN = 4,     // slmqtt_wake_signal was called (the count is drained)
    SLMQTT_HANGUP = 8,    // the socket failed or was closed by the peer
};

// Waits up to timeout_ms for the client's socket (readable; writable only
// while mosquitto_want_write says bytes wait) and the wake eventfd together,
// which libmosquitto's own mosquitto_loop cannot do (it waits on its socket
// only). mosq may be NULL or unconnected: then only the eventfd is watched.
// Returns the SLMQTT_* flags seen (0 on timeout), or -errno.
int slmqtt_wait(struct mosquitto *mosq, int wake_fd, int timeout_ms);

#ifdef __cplusplus
}
#endif
#endif
