// libusb-1.0, the USB library of the system (Debian's libusb-1.0-0): the ANT driver family
// talks to ANT USB sticks through it, and the watch drivers watch for plugged devices with its
// hotplug events.
//
// libusb is loaded when a USB command or driver first needs it (dlopen of libusb-1.0.so.0), not
// linked: a linked libusb and the libudev it needs would be loaded by every command at start-up,
// `healthgate log` included. The calls are spelled hg_usb_* (not libusb_*) so that nothing in
// the program stands in for libusb's own functions. Without libusb on the machine every call
// returns LIBUSB_ERROR_NOT_SUPPORTED (pointers NULL) and `hg_usb_load_error()` says why.
#ifndef HEALTHGATE_CLIBUSB_H
#define HEALTHGATE_CLIBUSB_H

#include <libusb-1.0/libusb.h>

/// NULL once libusb-1.0.so.0 is loaded (it is tried on the first call), else why it cannot be.
const char *hg_usb_load_error(void);

int hg_usb_init(libusb_context **ctx);
void hg_usb_exit(libusb_context *ctx);
const char *hg_usb_error_name(int code);
const char *hg_usb_strerror(int code);
int hg_usb_has_capability(uint32_t capability);

ssize_t hg_usb_get_device_list(libusb_context *ctx, libusb_device ***list);
void hg_usb_free_device_list(libusb_device **list, int unref_devices);
libusb_device *hg_usb_ref_device(libusb_device *dev);
void hg_usb_unref_device(libusb_device *dev);
int hg_usb_get_device_descriptor(libusb_device *dev, struct libusb_device_descriptor *desc);
uint8_t hg_usb_get_bus_number(libusb_device *dev);
uint8_t hg_usb_get_device_address(libusb_device *dev);
int hg_usb_get_port_numbers(libusb_device *dev, uint8_t *port_numbers, int port_numbers_len);

int hg_usb_get_active_config_descriptor(libusb_device *dev, struct libusb_config_descriptor **config);
void hg_usb_free_config_descriptor(struct libusb_config_descriptor *config);
libusb_device *hg_usb_get_device(libusb_device_handle *handle);
/// The bulk endpoints of `interface_number` (alternate setting 0) in the active configuration:
/// the first bulk IN and the first bulk OUT endpoint, and the IN endpoint's packet size. 0 when
/// found, a libusb error otherwise (LIBUSB_ERROR_NOT_FOUND: no such interface or endpoints).
int hg_usb_bulk_endpoints(libusb_device_handle *handle, int interface_number, unsigned char *in_endpoint,
                          unsigned char *out_endpoint, int *in_packet_size);

int hg_usb_open(libusb_device *dev, libusb_device_handle **handle);
void hg_usb_close(libusb_device_handle *handle);
int hg_usb_get_string_descriptor_ascii(libusb_device_handle *handle, uint8_t index, unsigned char *data, int length);
int hg_usb_kernel_driver_active(libusb_device_handle *handle, int interface_number);
int hg_usb_detach_kernel_driver(libusb_device_handle *handle, int interface_number);
int hg_usb_attach_kernel_driver(libusb_device_handle *handle, int interface_number);
int hg_usb_get_configuration(libusb_device_handle *handle, int *config);
int hg_usb_set_configuration(libusb_device_handle *handle, int configuration);
int hg_usb_claim_interface(libusb_device_handle *handle, int interface_number);
int hg_usb_release_interface(libusb_device_handle *handle, int interface_number);
int hg_usb_reset_device(libusb_device_handle *handle);
int hg_usb_clear_halt(libusb_device_handle *handle, unsigned char endpoint);
int hg_usb_bulk_transfer(libusb_device_handle *handle, unsigned char endpoint, unsigned char *data, int length,
                         int *transferred, unsigned int timeout);

int hg_usb_handle_events_timeout_completed(libusb_context *ctx, struct timeval *tv, int *completed);
int hg_usb_hotplug_register_callback(libusb_context *ctx, int events, int flags, int vendor_id, int product_id,
                                     int dev_class, libusb_hotplug_callback_fn cb_fn, void *user_data,
                                     libusb_hotplug_callback_handle *callback_handle);
void hg_usb_hotplug_deregister_callback(libusb_context *ctx, libusb_hotplug_callback_handle callback_handle);
/// Wakes a thread blocked in hg_usb_handle_events_timeout_completed (libusb_interrupt_event_handler).
void hg_usb_interrupt_event_handler(libusb_context *ctx);

/// A bulk IN transfer kept pending on an endpoint at all times: submitted without a timeout and
/// submitted again as soon as it completes, never cancelled to look at a clock (a transfer
/// cancelled while the device sends can lose what it sent). One thread waits on it.
typedef struct hg_usb_reader hg_usb_reader;
/// Allocates and submits the first transfer of `length` bytes; NULL with `*error` set on failure.
hg_usb_reader *hg_usb_reader_start(libusb_context *ctx, libusb_device_handle *handle, unsigned char endpoint, int length,
                                   int *error);
/// Handles libusb's events for up to `timeout_ms` or until the pending transfer completes. 0: the
/// transfer completed (its bytes copied into `data`, `*received` of them; it is submitted again)
/// or is still pending (`*received` 0). Negative: the transfer ended with this libusb error
/// (LIBUSB_ERROR_PIPE: stalled; LIBUSB_ERROR_NO_DEVICE: gone; LIBUSB_ERROR_OVERFLOW; LIBUSB_ERROR_IO),
/// what it received copied all the same; it is not pending until `hg_usb_reader_resubmit`.
int hg_usb_reader_wait(hg_usb_reader *reader, unsigned char *data, int timeout_ms, int *received);
/// Submits the transfer again after `hg_usb_reader_wait` returned an error.
int hg_usb_reader_resubmit(hg_usb_reader *reader);
/// Cancels the pending transfer, waits for it to end (up to 10 s) and frees the reader.
void hg_usb_reader_stop(hg_usb_reader *reader);

#endif
