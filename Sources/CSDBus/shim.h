// sd-bus, the D-Bus client library of the system's libsystemd: the BlueZ backend of the
// Bluetooth LE driver talks to bluetoothd through it.
#ifndef HEALTHGATE_CSDBUS_SHIM_H
#define HEALTHGATE_CSDBUS_SHIM_H

#include <systemd/sd-bus.h>

#endif
