// The system zlib, for the server's streaming gzip decompression, zip entries (and the tests'
// compression).
// zlib's init functions are macros that Swift cannot call; these wrap the ones needed.
#ifndef HEALTHGATE_CZLIB_SHIM_H
#define HEALTHGATE_CZLIB_SHIM_H

#include <zlib.h>

/// inflateInit2 with gzip framing only (window bits 15 + 16).
static inline int czlib_inflate_init_gzip(z_stream *stream) {
    return inflateInit2(stream, 15 + 16);
}

/// inflateInit2 for raw deflate data without framing (window bits -15): zip entries.
static inline int czlib_inflate_init_raw(z_stream *stream) {
    return inflateInit2(stream, -15);
}

/// deflateInit2 writing gzip framing (window bits 15 + 16) at `level` (0...9).
static inline int czlib_deflate_init_gzip(z_stream *stream, int level) {
    return deflateInit2(stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
}

#endif
