// Forwards the libmtp calls of the watch family to libmtp.so.9, loaded and initialised on first
// use (see include/CLibMTP.h for why it is not linked).
#include "CLibMTP.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

static void *library;
static const char *load_error = "libmtp.so.9 was not loaded yet";
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

#define FUNCTION(ret, name, args) static ret(*p_##name) args;
#define FUNCTIONS(X) \
    X(void, LIBMTP_Init, (void)) \
    X(LIBMTP_error_number_t, LIBMTP_Detect_Raw_Devices, (LIBMTP_raw_device_t **, int *)) \
    X(LIBMTP_mtpdevice_t *, LIBMTP_Open_Raw_Device_Uncached, (LIBMTP_raw_device_t *)) \
    X(void, LIBMTP_Release_Device, (LIBMTP_mtpdevice_t *)) \
    X(char *, LIBMTP_Get_Manufacturername, (LIBMTP_mtpdevice_t *)) \
    X(char *, LIBMTP_Get_Modelname, (LIBMTP_mtpdevice_t *)) \
    X(char *, LIBMTP_Get_Serialnumber, (LIBMTP_mtpdevice_t *)) \
    X(LIBMTP_error_t *, LIBMTP_Get_Errorstack, (LIBMTP_mtpdevice_t *)) \
    X(void, LIBMTP_Clear_Errorstack, (LIBMTP_mtpdevice_t *)) \
    X(int, LIBMTP_Get_Storage, (LIBMTP_mtpdevice_t *, int const)) \
    X(LIBMTP_file_t *, LIBMTP_Get_Files_And_Folders, (LIBMTP_mtpdevice_t *, uint32_t const, uint32_t const)) \
    X(void, LIBMTP_destroy_file_t, (LIBMTP_file_t *)) \
    X(int, LIBMTP_Get_File_To_File_Descriptor, \
      (LIBMTP_mtpdevice_t *, uint32_t const, int const, LIBMTP_progressfunc_t const, void const *const))
FUNCTIONS(FUNCTION)

static void load(void) {
    library = dlopen("libmtp.so.9", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        load_error = "cannot load libmtp.so.9 (the system's MTP library); install libmtp9";
        return;
    }
    load_error = NULL;
#define LOOKUP(ret, name, args) \
    p_##name = (ret(*) args)dlsym(library, #name); \
    if (p_##name == NULL) load_error = "libmtp.so.9 lacks a function HealthGate calls (" #name "); libmtp 1.1.6 or later is needed";
    FUNCTIONS(LOOKUP)
    if (load_error == NULL) p_LIBMTP_Init();
}

static int loaded(void) {
    pthread_once(&load_once, load);
    return load_error == NULL;
}

const char *hg_mtp_load_error(void) {
    pthread_once(&load_once, load);
    return load_error;
}

LIBMTP_error_number_t hg_mtp_detect_raw_devices(LIBMTP_raw_device_t **devices, int *count) {
    if (!loaded()) return LIBMTP_ERROR_GENERAL;
    return p_LIBMTP_Detect_Raw_Devices(devices, count);
}

LIBMTP_mtpdevice_t *hg_mtp_open_raw_device_uncached(LIBMTP_raw_device_t *raw) {
    return loaded() ? p_LIBMTP_Open_Raw_Device_Uncached(raw) : NULL;
}

void hg_mtp_release_device(LIBMTP_mtpdevice_t *device) {
    if (loaded() && device != NULL) p_LIBMTP_Release_Device(device);
}

char *hg_mtp_get_manufacturername(LIBMTP_mtpdevice_t *device) { return loaded() ? p_LIBMTP_Get_Manufacturername(device) : NULL; }
char *hg_mtp_get_modelname(LIBMTP_mtpdevice_t *device) { return loaded() ? p_LIBMTP_Get_Modelname(device) : NULL; }
char *hg_mtp_get_serialnumber(LIBMTP_mtpdevice_t *device) { return loaded() ? p_LIBMTP_Get_Serialnumber(device) : NULL; }

LIBMTP_error_t *hg_mtp_get_errorstack(LIBMTP_mtpdevice_t *device) { return loaded() ? p_LIBMTP_Get_Errorstack(device) : NULL; }

void hg_mtp_clear_errorstack(LIBMTP_mtpdevice_t *device) {
    if (loaded()) p_LIBMTP_Clear_Errorstack(device);
}

int hg_mtp_get_storage(LIBMTP_mtpdevice_t *device, int const sort_by) { return loaded() ? p_LIBMTP_Get_Storage(device, sort_by) : -1; }

LIBMTP_file_t *hg_mtp_get_files_and_folders(LIBMTP_mtpdevice_t *device, uint32_t const storage, uint32_t const parent) {
    return loaded() ? p_LIBMTP_Get_Files_And_Folders(device, storage, parent) : NULL;
}

void hg_mtp_destroy_file_t(LIBMTP_file_t *file) {
    if (loaded() && file != NULL) p_LIBMTP_destroy_file_t(file);
}

int hg_mtp_get_file_to_file_descriptor(LIBMTP_mtpdevice_t *device, uint32_t const id, int const fd,
                                       LIBMTP_progressfunc_t const callback, void const *const data) {
    return loaded() ? p_LIBMTP_Get_File_To_File_Descriptor(device, id, fd, callback, data) : -1;
}

