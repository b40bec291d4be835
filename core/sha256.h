// sha256.h: SHA-256 (FIPS 180-4), for naming a weights file in a checkpoint.
//
// Incremental: init, update with any number of byte runs, final. The digest of a file is
// sha256_file (streamed in blocks; the file is never held in memory).
//
//     Sha256 s; sha256_init(&s); sha256_update(&s, "abc", 3);
//     unsigned char d[SHA256_DIGEST_BYTES]; sha256_final(&s, d);
//     char hex[SHA256_HEX_CHARS + 1]; sha256_hex(hex, d);   // "ba7816bf..."
#ifndef CORE_SHA256_H
#define CORE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

#define SHA256_DIGEST_BYTES 32
#define SHA256_HEX_CHARS 64

typedef struct {
    uint32_t h[8];          // the chaining value
    uint64_t bytes;         // message length so far
    unsigned char buf[64];  // a partial block
    size_t fill;            // bytes in buf
} Sha256;

void sha256_init(Sha256 *s);
void sha256_update(Sha256 *s, const void *data, size_t len);
// Pads, writes the digest, and leaves s spent (init again to reuse).
void sha256_final(Sha256 *s, unsigned char digest[SHA256_DIGEST_BYTES]);
// hex (65 chars): lower-case hexadecimal of the digest, 0-terminated.
void sha256_hex(char *hex, const unsigned char digest[SHA256_DIGEST_BYTES]);
// The digest of a whole file; -1 with "PATH: reason" when it cannot be read.
int sha256_file(unsigned char digest[SHA256_DIGEST_BYTES], const char *path, Error *err);

#endif
