// Forwards the libusb calls of the USB drivers to libusb-1.0.so.0, loaded on first use (see
// include/CLibUSB.h for why it is not linked).
#include "CLibUSB.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *library;
static const char *load_error = "libusb-1.0.so.0 was not loaded yet";
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

#define FUNCTION(ret, name, args) static ret (*p_##name) args;
#define FUNCTIONS(X) \
    X(int, libusb_init, (libusb_context **)) \
    X(void, libusb_exit, (libusb_context *)) \
    X(const char *, libusb_error_name, (int)) \
    X(const char *, libusb_strerror, (int)) \
    X(int, libusb_has_capability, (uint32_t)) \
    X(ssize_t, libusb_get_device_list, (libusb_context *, libusb_device ***)) \
    X(void, libusb_free_device_list, (libusb_device **, int)) \
    X(libusb_device *, libusb_ref_device, (libusb_device *)) \
    X(void, libusb_unref_device, (libusb_device *)) \
    X(int, libusb_get_device_descriptor, (libusb_device *, struct libusb_device_descriptor *)) \
    X(uint8_t, libusb_get_bus_number, (libusb_device *)) \
    X(uint8_t, libusb_get_device_address, (libusb_device *)) \
    X(int, libusb_get_port_numbers, (libusb_device *, uint8_t *, int)) \
    X(int, libusb_get_active_config_descriptor, (libusb_device *, struct libusb_config_descriptor **)) \
    X(void, libusb_free_config_descriptor, (struct libusb_config_descriptor *)) \
    X(libusb_device *, libusb_get_device, (libusb_device_handle *)) \
    X(int, libusb_open, (libusb_device *, libusb_device_handle **)) \
    X(void, libusb_close, (libusb_device_handle *)) \
    X(int, libusb_get_string_descriptor_ascii, (libusb_device_handle *, uint8_t, unsigned char *, int)) \
    X(int, libusb_kernel_driver_active, (libusb_device_handle *, int)) \
    X(int, libusb_detach_kernel_driver, (libusb_device_handle *, int)) \
    X(int, libusb_attach_kernel_driver, (libusb_device_handle *, int)) \
    X(int, libusb_get_configuration, (libusb_device_handle *, int *)) \
    X(int, libusb_set_configuration, (libusb_device_handle *, int)) \
    X(int, libusb_claim_interface, (libusb_device_handle *, int)) \
    X(int, libusb_release_interface, (libusb_device_handle *, int)) \
    X(int, libusb_reset_device, (libusb_device_handle *)) \
    X(int, libusb_clear_halt, (libusb_device_handle *, unsigned char)) \
    X(int, libusb_bulk_transfer, (libusb_device_handle *, unsigned char, unsigned char *, int, int *, unsigned int)) \
    X(int, libusb_handle_events_timeout_completed, (libusb_context *, struct timeval *, int *)) \
    X(int, libusb_hotplug_register_callback, (libusb_context *, int, int, int, int, int, libusb_hotplug_callback_fn, void *, \
                                              libusb_hotplug_callback_handle *)) \
    X(void, libusb_hotplug_deregister_callback, (libusb_context *, libusb_hotplug_callback_handle)) \
    X(void, libusb_interrupt_event_handler, (libusb_context *)) \
    X(struct libusb_transfer *, libusb_alloc_transfer, (int)) \
    X(void, libusb_free_transfer, (struct libusb_transfer *)) \
    X(int, libusb_submit_transfer, (struct libusb_transfer *)) \
    X(int, libusb_cancel_transfer, (struct libusb_transfer *))
FUNCTIONS(FUNCTION)

static void load(void) {
    library = dlopen("libusb-1.0.so.0", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        load_error = "cannot load libusb-1.0.so.0 (the system's USB library); install libusb-1.0-0";
        return;
    }
    load_error = NULL;
#define LOOKUP(ret, name, args) \
    p_##name = (ret (*) args)dlsym(library, #name); \
    if (p_##name == NULL) load_error = "libusb-1.0.so.0 lacks a function HealthGate calls (" #name "); libusb 1.0.22 or later is needed";
    FUNCTIONS(LOOKUP)
}

static int loaded(void) {
    pthread_once(&load_once, load);
    return load_error == NULL;
}

const char *hg_usb_load_error(void) {
    pthread_once(&load_once, load);
    return load_error;
}

#define NOT_LOADED LIBUSB_ERROR_NOT_SUPPORTED

int hg_usb_init(libusb_context **ctx) { return loaded() ? p_libusb_init(ctx) : NOT_LOADED; }
void hg_usb_exit(libusb_context *ctx) { if (loaded()) p_libusb_exit(ctx); }
const char *hg_usb_error_name(int code) { return loaded() ? p_libusb_error_name(code) : "LIBUSB_NOT_LOADED"; }
const char *hg_usb_strerror(int code) { return loaded() ? p_libusb_strerror(code) : load_error; }
int hg_usb_has_capability(uint32_t capability) { return loaded() ? p_libusb_has_capability(capability) : 0; }

ssize_t hg_usb_get_device_list(libusb_context *ctx, libusb_device ***list) {
    return loaded() ? p_libusb_get_device_list(ctx, list) : NOT_LOADED;
}
void hg_usb_free_device_list(libusb_device **list, int unref_devices) {
    if (loaded()) p_libusb_free_device_list(list, unref_devices);
}
libusb_device *hg_usb_ref_device(libusb_device *dev) { return loaded() ? p_libusb_ref_device(dev) : NULL; }
void hg_usb_unref_device(libusb_device *dev) { if (loaded()) p_libusb_unref_device(dev); }
int hg_usb_get_device_descriptor(libusb_device *dev, struct libusb_device_descriptor *desc) {
    return loaded() ? p_libusb_get_device_descriptor(dev, desc) : NOT_LOADED;
}
uint8_t hg_usb_get_bus_number(libusb_device *dev) { return loaded() ? p_libusb_get_bus_number(dev) : 0; }
uint8_t hg_usb_get_device_address(libusb_device *dev) { return loaded() ? p_libusb_get_device_address(dev) : 0; }
int hg_usb_get_port_numbers(libusb_device *dev, uint8_t *port_numbers, int port_numbers_len) {
    return loaded() ? p_libusb_get_port_numbers(dev, port_numbers, port_numbers_len) : NOT_LOADED;
}

int hg_usb_get_active_config_descriptor(libusb_device *dev, struct libusb_config_descriptor **config) {
    return loaded() ? p_libusb_get_active_config_descriptor(dev, config) : NOT_LOADED;
}
void hg_usb_free_config_descriptor(struct libusb_config_descriptor *config) {
    if (loaded()) p_libusb_free_config_descriptor(config);
}
libusb_device *hg_usb_get_device(libusb_device_handle *handle) { return loaded() ? p_libusb_get_device(handle) : NULL; }

int hg_usb_bulk_endpoints(libusb_device_handle *handle, int interface_number, unsigned char *in_endpoint,
                          unsigned char *out_endpoint, int *in_packet_size) {
    if (!loaded()) return NOT_LOADED;
    struct libusb_config_descriptor *config = NULL;
    int r = p_libusb_get_active_config_descriptor(p_libusb_get_device(handle), &config);
    if (r < 0) return r;
    r = LIBUSB_ERROR_NOT_FOUND;
    *in_endpoint = 0;
    *out_endpoint = 0;
    for (int i = 0; i < config->bNumInterfaces; i++) {
        const struct libusb_interface *interface = &config->interface[i];
        if (interface->num_altsetting < 1) continue;
        const struct libusb_interface_descriptor *setting = &interface->altsetting[0];
        if (setting->bInterfaceNumber != interface_number) continue;
        for (int e = 0; e < setting->bNumEndpoints; e++) {
            const struct libusb_endpoint_descriptor *endpoint = &setting->endpoint[e];
            if ((endpoint->bmAttributes & 0x03) != LIBUSB_TRANSFER_TYPE_BULK) continue;
            if ((endpoint->bEndpointAddress & 0x80) && *in_endpoint == 0) {
                *in_endpoint = endpoint->bEndpointAddress;
                *in_packet_size = endpoint->wMaxPacketSize & 0x7FF;
            } else if (!(endpoint->bEndpointAddress & 0x80) && *out_endpoint == 0) {
                *out_endpoint = endpoint->bEndpointAddress;
            }
        }
        if (*in_endpoint != 0 && *out_endpoint != 0) r = 0;
    }
    p_libusb_free_config_descriptor(config);
    return r;
}

int hg_usb_open(libusb_device *dev, libusb_device_handle **handle) {
    return loaded() ? p_libusb_open(dev, handle) : NOT_LOADED;
}
void hg_usb_close(libusb_device_handle *handle) { if (loaded()) p_libusb_close(handle); }
int hg_usb_get_string_descriptor_ascii(libusb_device_handle *handle, uint8_t index, unsigned char *data, int length) {
    return loaded() ? p_libusb_get_string_descriptor_ascii(handle, index, data, length) : NOT_LOADED;
}
int hg_usb_kernel_driver_active(libusb_device_handle *handle, int interface_number) {
    return loaded() ? p_libusb_kernel_driver_active(handle, interface_number) : NOT_LOADED;
}
int hg_usb_detach_kernel_driver(libusb_device_handle *handle, int interface_number) {
    return loaded() ? p_libusb_detach_kernel_driver(handle, interface_number) : NOT_LOADED;
}
int hg_usb_attach_kernel_driver(libusb_device_handle *handle, int interface_number) {
    return loaded() ? p_libusb_attach_kernel_driver(handle, interface_number) : NOT_LOADED;
}
int hg_usb_get_configuration(libusb_device_handle *handle, int *config) {
    return loaded() ? p_libusb_get_configuration(handle, config) : NOT_LOADED;
}
int hg_usb_set_configuration(libusb_device_handle *handle, int configuration) {
    return loaded() ? p_libusb_set_configuration(handle, configuration) : NOT_LOADED;
}
int hg_usb_claim_interface(libusb_device_handle *handle, int interface_number) {
    return loaded() ? p_libusb_claim_interface(handle, interface_number) : NOT_LOADED;
}
int hg_usb_release_interface(libusb_device_handle *handle, int interface_number) {
    return loaded() ? p_libusb_release_interface(handle, interface_number) : NOT_LOADED;
}
int hg_usb_reset_device(libusb_device_handle *handle) { return loaded() ? p_libusb_reset_device(handle) : NOT_LOADED; }
int hg_usb_clear_halt(libusb_device_handle *handle, unsigned char endpoint) {
    return loaded() ? p_libusb_clear_halt(handle, endpoint) : NOT_LOADED;
}
int hg_usb_bulk_transfer(libusb_device_handle *handle, unsigned char endpoint, unsigned char *data, int length,
                         int *transferred, unsigned int timeout) {
    return loaded() ? p_libusb_bulk_transfer(handle, endpoint, data, length, transferred, timeout) : NOT_LOADED;
}

int hg_usb_handle_events_timeout_completed(libusb_context *ctx, struct timeval *tv, int *completed) {
    return loaded() ? p_libusb_handle_events_timeout_completed(ctx, tv, completed) : NOT_LOADED;
}
int hg_usb_hotplug_register_callback(libusb_context *ctx, int events, int flags, int vendor_id, int product_id,
                                     int dev_class, libusb_hotplug_callback_fn cb_fn, void *user_data,
                                     libusb_hotplug_callback_handle *callback_handle) {
    return loaded() ? p_libusb_hotplug_register_callback(ctx, events, flags, vendor_id, product_id, dev_class, cb_fn,
                                                         user_data, callback_handle)
                    : NOT_LOADED;
}
void hg_usb_hotplug_deregister_callback(libusb_context *ctx, libusb_hotplug_callback_handle callback_handle) {
    if (loaded()) p_libusb_hotplug_deregister_callback(ctx, callback_handle);
}
void hg_usb_interrupt_event_handler(libusb_context *ctx) { if (loaded()) p_libusb_interrupt_event_handler(ctx); }

// The pending reader (see CLibUSB.h).
struct hg_usb_reader {
    libusb_context *ctx;
    struct libusb_transfer *transfer;
    unsigned char *buffer;
    int length;
    int completed;  // set by the callback on the thread handling events, read after its return
    int pending;
};

static void reader_done(struct libusb_transfer *transfer) {
    ((hg_usb_reader *)transfer->user_data)->completed = 1;
}

static int reader_submit(hg_usb_reader *reader) {
    reader->completed = 0;
    int r = p_libusb_submit_transfer(reader->transfer);
    reader->pending = r == 0;
    return r;
}

hg_usb_reader *hg_usb_reader_start(libusb_context *ctx, libusb_device_handle *handle, unsigned char endpoint, int length,
                                   int *error) {
    if (!loaded()) {
        *error = NOT_LOADED;
        return NULL;
    }
    hg_usb_reader *reader = calloc(1, sizeof *reader);
    unsigned char *buffer = malloc((size_t)length);
    struct libusb_transfer *transfer = p_libusb_alloc_transfer(0);
    if (reader == NULL || buffer == NULL || transfer == NULL) {
        free(reader);
        free(buffer);
        if (transfer != NULL) p_libusb_free_transfer(transfer);
        *error = LIBUSB_ERROR_NO_MEM;
        return NULL;
    }
    reader->ctx = ctx;
    reader->transfer = transfer;
    reader->buffer = buffer;
    reader->length = length;
    // libusb_fill_bulk_transfer, spelled out: no timeout.
    transfer->dev_handle = handle;
    transfer->endpoint = endpoint;
    transfer->type = LIBUSB_TRANSFER_TYPE_BULK;
    transfer->timeout = 0;
    transfer->buffer = buffer;
    transfer->length = length;
    transfer->user_data = reader;
    transfer->callback = reader_done;
    int r = reader_submit(reader);
    if (r != 0) {
        p_libusb_free_transfer(transfer);
        free(buffer);
        free(reader);
        *error = r;
        return NULL;
    }
    return reader;
}

static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

int hg_usb_reader_wait(hg_usb_reader *reader, unsigned char *data, int timeout_ms, int *received) {
    *received = 0;
    if (!reader->pending) return LIBUSB_ERROR_NOT_FOUND;
    long long deadline = now_ms() + timeout_ms;
    while (!reader->completed) {
        long long left = deadline - now_ms();
        if (left <= 0) return 0;  // still pending: nothing cancelled
        struct timeval tv = {.tv_sec = left / 1000, .tv_usec = (left % 1000) * 1000};
        int r = p_libusb_handle_events_timeout_completed(reader->ctx, &tv, &reader->completed);
        if (r < 0 && r != LIBUSB_ERROR_INTERRUPTED && r != LIBUSB_ERROR_TIMEOUT) return r;
    }
    reader->pending = 0;
    struct libusb_transfer *t = reader->transfer;
    int n = t->actual_length < 0 ? 0 : (t->actual_length > reader->length ? reader->length : t->actual_length);
    memcpy(data, reader->buffer, (size_t)n);
    *received = n;
    switch (t->status) {
    case LIBUSB_TRANSFER_COMPLETED:
        return reader_submit(reader);
    case LIBUSB_TRANSFER_STALL:
        return LIBUSB_ERROR_PIPE;
    case LIBUSB_TRANSFER_NO_DEVICE:
        return LIBUSB_ERROR_NO_DEVICE;
    case LIBUSB_TRANSFER_OVERFLOW:
        return LIBUSB_ERROR_OVERFLOW;
    case LIBUSB_TRANSFER_TIMED_OUT:
        return LIBUSB_ERROR_TIMEOUT;
    case LIBUSB_TRANSFER_CANCELLED:
        return LIBUSB_ERROR_INTERRUPTED;
    default:
        return LIBUSB_ERROR_IO;
    }
}

int hg_usb_reader_resubmit(hg_usb_reader *reader) {
    return reader->pending ? 0 : reader_submit(reader);
}

void hg_usb_reader_stop(hg_usb_reader *reader) {
    if (reader == NULL) return;
    if (reader->pending) {
        p_libusb_cancel_transfer(reader->transfer);
        long long deadline = now_ms() + 10000;
        while (!reader->completed && now_ms() < deadline) {
            struct timeval tv = {.tv_sec = 0, .tv_usec = 100000};
            p_libusb_handle_events_timeout_completed(reader->ctx, &tv, &reader->completed);
        }
        if (!reader->completed) return;  // still in libusb's hands: leaked rather than freed under it
    }
    p_libusb_free_transfer(reader->transfer);
    free(reader->buffer);
    free(reader);
}
