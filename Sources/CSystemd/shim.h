// libsystemd's daemon API (libsystemd-dev): sd_notify for Type=notify
// readiness and the watchdog, sd_watchdog_enabled for its interval. Swift
// calls these directly; this header only brings them in.
#include <systemd/sd-daemon.h>
