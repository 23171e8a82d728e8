// The system zlib, for the server's streaming gzip decompression. zlib's init functions are
// macros that Swift cannot call; this wraps the one the server needs.
#ifndef HEALTHGATE_CZLIB_SHIM_H
#define HEALTHGATE_CZLIB_SHIM_H

#include <zlib.h>

/// inflateInit2 with gzip framing only (window bits 15 + 16).
static inline int czlib_inflate_init_gzip(z_stream *stream) {
    return inflateInit2(stream, 15 + 16);
}

#endif
