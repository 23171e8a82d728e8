// BlueZ's C headers (libbluetooth-dev): the kernel's Bluetooth socket interface as the kernel
// declares it. The own host stack takes its HCI user channel constants (AF_BLUETOOTH,
// BTPROTO_HCI, HCI_CHANNEL_USER) and `struct sockaddr_hci` from here. Headers only: nothing of
// libbluetooth.so is called or linked.
#include <sys/socket.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
