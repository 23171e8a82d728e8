// Forwards the sd-bus calls of the BlueZ backend to libsystemd.so.0, loaded on first use
// (see include/CSDBus.h for why it is not linked).
#include "CSDBus.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>

static void *library;
static const char *load_error = "libsystemd.so.0 was not loaded yet";
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static int (*p_sd_bus_open_system)(sd_bus **ret);
static int (*p_sd_bus_new)(sd_bus **ret);
static int (*p_sd_bus_set_address)(sd_bus *bus, const char *address);
static int (*p_sd_bus_set_bus_client)(sd_bus *bus, int b);
static int (*p_sd_bus_start)(sd_bus *bus);
static sd_bus * (*p_sd_bus_unref)(sd_bus *bus);
static sd_bus * (*p_sd_bus_flush_close_unref)(sd_bus *bus);
static int (*p_sd_bus_get_fd)(sd_bus *bus);
static int (*p_sd_bus_get_events)(sd_bus *bus);
static int (*p_sd_bus_get_timeout)(sd_bus *bus, uint64_t *timeout_usec);
static int (*p_sd_bus_process)(sd_bus *bus, sd_bus_message **r);
static int (*p_sd_bus_add_match)(sd_bus *bus, sd_bus_slot **slot, const char *match, sd_bus_message_handler_t callback, void *userdata);
static int (*p_sd_bus_call_async)(sd_bus *bus, sd_bus_slot **slot, sd_bus_message *m, sd_bus_message_handler_t callback, void *userdata, uint64_t usec);
static int (*p_sd_bus_message_new_method_call)(sd_bus *bus, sd_bus_message **m, const char *destination, const char *path, const char *interface, const char *member);
static sd_bus_message * (*p_sd_bus_message_unref)(sd_bus_message *m);
static int (*p_sd_bus_message_append_basic)(sd_bus_message *m, char type, const void *p);
static int (*p_sd_bus_message_open_container)(sd_bus_message *m, char type, const char *contents);
static int (*p_sd_bus_message_close_container)(sd_bus_message *m);
static int (*p_sd_bus_message_enter_container)(sd_bus_message *m, char type, const char *contents);
static int (*p_sd_bus_message_exit_container)(sd_bus_message *m);
static int (*p_sd_bus_message_peek_type)(sd_bus_message *m, char *type, const char **contents);
static int (*p_sd_bus_message_read_basic)(sd_bus_message *m, char type, void *p);
static int (*p_sd_bus_message_read_array)(sd_bus_message *m, char type, const void **ptr, size_t *size);
static int (*p_sd_bus_message_at_end)(sd_bus_message *m, int complete);
static const char * (*p_sd_bus_message_get_member)(sd_bus_message *m);
static const char * (*p_sd_bus_message_get_path)(sd_bus_message *m);
static const char * (*p_sd_bus_message_get_sender)(sd_bus_message *m);
static const sd_bus_error * (*p_sd_bus_message_get_error)(sd_bus_message *m);
static int (*p_sd_bus_message_is_method_error)(sd_bus_message *m, const char *name);
// The pairing agent: an object bluetoothd calls, and the replies to its calls.
static int (*p_sd_bus_add_object)(sd_bus *bus, sd_bus_slot **slot, const char *path, sd_bus_message_handler_t callback, void *userdata);
static sd_bus_slot * (*p_sd_bus_slot_unref)(sd_bus_slot *slot);
static int (*p_sd_bus_send)(sd_bus *bus, sd_bus_message *m, uint64_t *cookie);
static int (*p_sd_bus_message_new_method_return)(sd_bus_message *call, sd_bus_message **m);
static int (*p_sd_bus_message_new_method_error)(sd_bus_message *call, sd_bus_message **m, const sd_bus_error *e);
static sd_bus_message * (*p_sd_bus_message_ref)(sd_bus_message *m);
static const char * (*p_sd_bus_message_get_interface)(sd_bus_message *m);

static void *symbol(const char *name) {
    void *p = dlsym(library, name);
    if (p == NULL) load_error = "libsystemd.so.0 lacks an sd-bus function HealthGate calls";
    return p;
}

static void load(void) {
    library = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        load_error = "cannot load libsystemd.so.0 (the system's sd-bus); install libsystemd0";
        return;
    }
    load_error = NULL;
    p_sd_bus_open_system = symbol("sd_bus_open_system");
    p_sd_bus_new = symbol("sd_bus_new");
    p_sd_bus_set_address = symbol("sd_bus_set_address");
    p_sd_bus_set_bus_client = symbol("sd_bus_set_bus_client");
    p_sd_bus_start = symbol("sd_bus_start");
    p_sd_bus_unref = symbol("sd_bus_unref");
    p_sd_bus_flush_close_unref = symbol("sd_bus_flush_close_unref");
    p_sd_bus_get_fd = symbol("sd_bus_get_fd");
    p_sd_bus_get_events = symbol("sd_bus_get_events");
    p_sd_bus_get_timeout = symbol("sd_bus_get_timeout");
    p_sd_bus_process = symbol("sd_bus_process");
    p_sd_bus_add_match = symbol("sd_bus_add_match");
    p_sd_bus_call_async = symbol("sd_bus_call_async");
    p_sd_bus_message_new_method_call = symbol("sd_bus_message_new_method_call");
    p_sd_bus_message_unref = symbol("sd_bus_message_unref");
    p_sd_bus_message_append_basic = symbol("sd_bus_message_append_basic");
    p_sd_bus_message_open_container = symbol("sd_bus_message_open_container");
    p_sd_bus_message_close_container = symbol("sd_bus_message_close_container");
    p_sd_bus_message_enter_container = symbol("sd_bus_message_enter_container");
    p_sd_bus_message_exit_container = symbol("sd_bus_message_exit_container");
    p_sd_bus_message_peek_type = symbol("sd_bus_message_peek_type");
    p_sd_bus_message_read_basic = symbol("sd_bus_message_read_basic");
    p_sd_bus_message_read_array = symbol("sd_bus_message_read_array");
    p_sd_bus_message_at_end = symbol("sd_bus_message_at_end");
    p_sd_bus_message_get_member = symbol("sd_bus_message_get_member");
    p_sd_bus_message_get_path = symbol("sd_bus_message_get_path");
    p_sd_bus_message_get_sender = symbol("sd_bus_message_get_sender");
    p_sd_bus_message_get_error = symbol("sd_bus_message_get_error");
    p_sd_bus_message_is_method_error = symbol("sd_bus_message_is_method_error");
    p_sd_bus_add_object = symbol("sd_bus_add_object");
    p_sd_bus_slot_unref = symbol("sd_bus_slot_unref");
    p_sd_bus_send = symbol("sd_bus_send");
    p_sd_bus_message_new_method_return = symbol("sd_bus_message_new_method_return");
    p_sd_bus_message_new_method_error = symbol("sd_bus_message_new_method_error");
    p_sd_bus_message_ref = symbol("sd_bus_message_ref");
    p_sd_bus_message_get_interface = symbol("sd_bus_message_get_interface");
}

static int loaded(void) {
    pthread_once(&load_once, load);
    return load_error == NULL;
}

const char *hg_sd_bus_load_error(void) {
    loaded();
    return load_error;
}

int sd_bus_open_system(sd_bus **ret) {
    return loaded() ? p_sd_bus_open_system(ret) : -ENOSYS;
}

int hg_sd_bus_open_address(sd_bus **ret, const char *address) {
    if (!loaded()) return -ENOSYS;
    sd_bus *bus = NULL;
    int r = p_sd_bus_new(&bus);
    if (r < 0) return r;
    if ((r = p_sd_bus_set_address(bus, address)) < 0 || (r = p_sd_bus_set_bus_client(bus, 1)) < 0
        || (r = p_sd_bus_start(bus)) < 0) {
        p_sd_bus_unref(bus);
        return r;
    }
    *ret = bus;
    return 0;
}

sd_bus * sd_bus_flush_close_unref(sd_bus *bus) {
    return loaded() ? p_sd_bus_flush_close_unref(bus) : NULL;
}

int sd_bus_get_fd(sd_bus *bus) {
    return loaded() ? p_sd_bus_get_fd(bus) : -ENOSYS;
}

int sd_bus_get_events(sd_bus *bus) {
    return loaded() ? p_sd_bus_get_events(bus) : -ENOSYS;
}

int sd_bus_get_timeout(sd_bus *bus, uint64_t *timeout_usec) {
    return loaded() ? p_sd_bus_get_timeout(bus, timeout_usec) : -ENOSYS;
}

int sd_bus_process(sd_bus *bus, sd_bus_message **r) {
    return loaded() ? p_sd_bus_process(bus, r) : -ENOSYS;
}

int sd_bus_add_match(sd_bus *bus, sd_bus_slot **slot, const char *match, sd_bus_message_handler_t callback, void *userdata) {
    return loaded() ? p_sd_bus_add_match(bus, slot, match, callback, userdata) : -ENOSYS;
}

int sd_bus_call_async(sd_bus *bus, sd_bus_slot **slot, sd_bus_message *m, sd_bus_message_handler_t callback, void *userdata, uint64_t usec) {
    return loaded() ? p_sd_bus_call_async(bus, slot, m, callback, userdata, usec) : -ENOSYS;
}

int sd_bus_message_new_method_call(sd_bus *bus, sd_bus_message **m, const char *destination, const char *path, const char *interface, const char *member) {
    return loaded() ? p_sd_bus_message_new_method_call(bus, m, destination, path, interface, member) : -ENOSYS;
}

sd_bus_message * sd_bus_message_unref(sd_bus_message *m) {
    return loaded() ? p_sd_bus_message_unref(m) : NULL;
}

int sd_bus_message_append_basic(sd_bus_message *m, char type, const void *p) {
    return loaded() ? p_sd_bus_message_append_basic(m, type, p) : -ENOSYS;
}

int sd_bus_message_open_container(sd_bus_message *m, char type, const char *contents) {
    return loaded() ? p_sd_bus_message_open_container(m, type, contents) : -ENOSYS;
}

int sd_bus_message_close_container(sd_bus_message *m) {
    return loaded() ? p_sd_bus_message_close_container(m) : -ENOSYS;
}

int sd_bus_message_enter_container(sd_bus_message *m, char type, const char *contents) {
    return loaded() ? p_sd_bus_message_enter_container(m, type, contents) : -ENOSYS;
}

int sd_bus_message_exit_container(sd_bus_message *m) {
    return loaded() ? p_sd_bus_message_exit_container(m) : -ENOSYS;
}

int sd_bus_message_peek_type(sd_bus_message *m, char *type, const char **contents) {
    return loaded() ? p_sd_bus_message_peek_type(m, type, contents) : -ENOSYS;
}

int sd_bus_message_read_basic(sd_bus_message *m, char type, void *p) {
    return loaded() ? p_sd_bus_message_read_basic(m, type, p) : -ENOSYS;
}

int sd_bus_message_read_array(sd_bus_message *m, char type, const void **ptr, size_t *size) {
    return loaded() ? p_sd_bus_message_read_array(m, type, ptr, size) : -ENOSYS;
}

int sd_bus_message_at_end(sd_bus_message *m, int complete) {
    return loaded() ? p_sd_bus_message_at_end(m, complete) : -ENOSYS;
}

const char * sd_bus_message_get_member(sd_bus_message *m) {
    return loaded() ? p_sd_bus_message_get_member(m) : NULL;
}

const char * sd_bus_message_get_path(sd_bus_message *m) {
    return loaded() ? p_sd_bus_message_get_path(m) : NULL;
}

const char * sd_bus_message_get_sender(sd_bus_message *m) {
    return loaded() ? p_sd_bus_message_get_sender(m) : NULL;
}

const sd_bus_error * sd_bus_message_get_error(sd_bus_message *m) {
    return loaded() ? p_sd_bus_message_get_error(m) : NULL;
}

int sd_bus_message_is_method_error(sd_bus_message *m, const char *name) {
    return loaded() ? p_sd_bus_message_is_method_error(m, name) : -ENOSYS;
}

int sd_bus_add_object(sd_bus *bus, sd_bus_slot **slot, const char *path, sd_bus_message_handler_t callback, void *userdata) {
    return loaded() ? p_sd_bus_add_object(bus, slot, path, callback, userdata) : -ENOSYS;
}

sd_bus_slot * sd_bus_slot_unref(sd_bus_slot *slot) {
    return loaded() ? p_sd_bus_slot_unref(slot) : NULL;
}

int sd_bus_send(sd_bus *bus, sd_bus_message *m, uint64_t *cookie) {
    return loaded() ? p_sd_bus_send(bus, m, cookie) : -ENOSYS;
}

int sd_bus_message_new_method_return(sd_bus_message *call, sd_bus_message **m) {
    return loaded() ? p_sd_bus_message_new_method_return(call, m) : -ENOSYS;
}

int sd_bus_message_new_method_error(sd_bus_message *call, sd_bus_message **m, const sd_bus_error *e) {
    return loaded() ? p_sd_bus_message_new_method_error(call, m, e) : -ENOSYS;
}

sd_bus_message * sd_bus_message_ref(sd_bus_message *m) {
    return loaded() ? p_sd_bus_message_ref(m) : NULL;
}

const char * sd_bus_message_get_interface(sd_bus_message *m) {
    return loaded() ? p_sd_bus_message_get_interface(m) : NULL;
}
