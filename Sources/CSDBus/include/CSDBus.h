// sd-bus, the D-Bus client library of the system's libsystemd: the BlueZ backend of the
// Bluetooth LE driver talks to bluetoothd through it.
//
// libsystemd is loaded when the backend first opens the bus (dlopen of libsystemd.so.0), not
// linked: linked, it and the libraries it needs (lzma, zstd, lz4, gcrypt, capabilities) were
// loaded by every command at start-up, about 3.5 ms of each `healthgate log`. Without
// libsystemd on the machine, the calls return -ENOSYS (pointers NULL) and
// `hg_sd_bus_load_error()` says why.
#ifndef HEALTHGATE_CSDBUS_H
#define HEALTHGATE_CSDBUS_H

#include <systemd/sd-bus.h>

/// NULL once libsystemd.so.0 is loaded (it is tried on the first call), else why it cannot be.
const char *hg_sd_bus_load_error(void);

/// Connects to the message bus at `address` (a D-Bus address, `unix:path=...`) as a client, as
/// `sd_bus_open_system` does to the system bus: a bus other than the system's one (tests start
/// their own dbus-daemon) without going through the process's environment.
int hg_sd_bus_open_address(sd_bus **ret, const char *address);

#endif
