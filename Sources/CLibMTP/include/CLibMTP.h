// libmtp, the system's MTP library (Debian's libmtp9): the watch family reads the watches that
// attach over MTP (Media Transfer Protocol) through it.
//
// Like libusb (CLibUSB.h), libmtp is loaded when an MTP look first needs it (dlopen of
// libmtp.so.9), not linked: every other command, and a machine without libmtp, never loads it.
// The calls are spelled hg_mtp_* so that nothing in the program stands in for libmtp's own.
// Without libmtp every call fails (NULL, -1 or LIBMTP_ERROR_GENERAL) and `hg_mtp_load_error()`
// says why.
#ifndef HEALTHGATE_CLIBMTP_H
#define HEALTHGATE_CLIBMTP_H

#include <libmtp.h>

/// NULL once libmtp.so.9 is loaded and initialised (tried on the first call), else why not.
const char *hg_mtp_load_error(void);

LIBMTP_error_number_t hg_mtp_detect_raw_devices(LIBMTP_raw_device_t **devices, int *count);
LIBMTP_mtpdevice_t *hg_mtp_open_raw_device_uncached(LIBMTP_raw_device_t *raw);
void hg_mtp_release_device(LIBMTP_mtpdevice_t *device);
char *hg_mtp_get_manufacturername(LIBMTP_mtpdevice_t *device);
char *hg_mtp_get_modelname(LIBMTP_mtpdevice_t *device);
char *hg_mtp_get_serialnumber(LIBMTP_mtpdevice_t *device);
LIBMTP_error_t *hg_mtp_get_errorstack(LIBMTP_mtpdevice_t *device);
void hg_mtp_clear_errorstack(LIBMTP_mtpdevice_t *device);
int hg_mtp_get_storage(LIBMTP_mtpdevice_t *device, int const sort_by);
LIBMTP_file_t *hg_mtp_get_files_and_folders(LIBMTP_mtpdevice_t *device, uint32_t const storage, uint32_t const parent);
void hg_mtp_destroy_file_t(LIBMTP_file_t *file);
int hg_mtp_get_file_to_file_descriptor(LIBMTP_mtpdevice_t *device, uint32_t const id, int const fd,
                                       LIBMTP_progressfunc_t const callback, void const *const data);

#endif

