#include "datasets/idx.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/check.h"
#include "core/fileio.h"

// Bytes past the claimed data we inflate before giving up counting (trailing-data report).
#define IDX_TRAILING_COUNT_MAX ((size_t)1 << 16)
#define IDX_INBUF 65536

size_t idx_type_size(int type) {
    switch (type) {
    case IDX_U8: case IDX_I8: return 1;
    case IDX_I16: return 2;
    case IDX_I32: case IDX_F32: return 4;
    case IDX_F64: return 8;
    }
    return 0;
}

// A byte source: raw memory, a raw file, or a gzip stream fed from either.
typedef struct {
    const char *name;
    Error *err;
    const unsigned char *mem;  // memory input (NULL when reading fp)
    size_t mem_len, mem_pos;
    FILE *fp;
    int gz;
    z_stream zs;
    int zs_ready;
    int zs_finished;  // stream ended and no input remains
    int zs_cut;       // input ended inside a gzip stream
    unsigned char *inbuf;
} Source;

// Feeds the inflater more compressed input; returns the number of bytes made available.
static size_t source_refill(Source *s) {
    if (s->mem) {
        size_t left = s->mem_len - s->mem_pos;
        size_t n = left > (1u << 30) ? (1u << 30) : left;
        s->zs.next_in = (Bytef *)(s->mem + s->mem_pos);
        s->zs.avail_in = (uInt)n;
        s->mem_pos += n;
        return n;
    }
    size_t n = fread(s->inbuf, 1, IDX_INBUF, s->fp);
    s->zs.next_in = s->inbuf;
    s->zs.avail_in = (uInt)n;
    return n;
}

// Reads up to n bytes into buf; *got is how many (< n only at the end of the data).
static int source_read(Source *s, unsigned char *buf, size_t n, size_t *got) {
    *got = 0;
    if (!s->gz) {
        if (s->mem) {
            size_t left = s->mem_len - s->mem_pos;
            size_t k = n < left ? n : left;
            memcpy(buf, s->mem + s->mem_pos, k);
            s->mem_pos += k;
            *got = k;
            return 0;
        }
        errno = 0;  // so that the reason of a failed read is this read's
        *got = fread(buf, 1, n, s->fp);
        int e = errno;
        if (*got < n && ferror(s->fp))
            return error_set(s->err, "%s: read error: %s", s->name, strerror(e ? e : EIO));
        return 0;
    }
    while (*got < n && !s->zs_finished) {
        if (s->zs.avail_in == 0 && source_refill(s) == 0) {
            // No more input while the stream has not ended: the data end here.
            s->zs_cut = 1;
            s->zs_finished = 1;
            break;
        }
        size_t want = n - *got;
        if (want > (1u << 30)) want = 1u << 30;
        s->zs.next_out = buf + *got;
        s->zs.avail_out = (uInt)want;
        int rc = inflate(&s->zs, Z_NO_FLUSH);
        *got += want - s->zs.avail_out;
        if (rc == Z_STREAM_END) {
            // Another gzip member may follow (concatenated gzip files).
            if (s->zs.avail_in == 0 && source_refill(s) == 0) {
                s->zs_finished = 1;
            } else if (inflateReset(&s->zs) != Z_OK) {
                return error_set(s->err, "%s: gzip: cannot reset the inflater", s->name);
            }
        } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
            return error_set(s->err, "%s: corrupt gzip data: %s", s->name,
                             s->zs.msg ? s->zs.msg : zError(rc));
        }
    }
    return 0;
}

static void swap_to_host(unsigned char *data, size_t count, size_t size) {
    const uint16_t probe = 1;
    if (size == 1 || *(const unsigned char *)&probe == 0) return;  // big-endian host
    for (size_t i = 0; i < count; i++) {
        unsigned char *p = data + i * size;
        for (size_t a = 0, b = size - 1; a < b; a++, b--) {
            unsigned char t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
    }
}

// The header: magic, type, dimensions. Fills out's type, shape and count; *hlen gets the
// header's length in bytes.
static int read_header(Idx *out, Source *s, size_t *hlen) {
    unsigned char head[4 + 4 * IDX_MAX_DIMS];
    size_t got;
    if (source_read(s, head, 4, &got)) return -1;
    if (got < 4)
        return error_set(s->err, "%s: too short for an IDX header (%zu bytes)", s->name, got);
    if (head[0] != 0 || head[1] != 0)
        return error_set(s->err, "%s: bad magic %02x %02x %02x %02x (not an IDX file)", s->name,
                         head[0], head[1], head[2], head[3]);
    int type = head[2], ndim = head[3];
    size_t esize = idx_type_size(type);
    if (!esize) return error_set(s->err, "%s: unknown IDX data type 0x%02x", s->name, type);
    if (ndim < 1 || ndim > IDX_MAX_DIMS)
        return error_set(s->err, "%s: %d dimensions (1 to %d supported)", s->name, ndim,
                         IDX_MAX_DIMS);
    *hlen = 4 + 4 * (size_t)ndim;
    if (source_read(s, head + 4, *hlen - 4, &got)) return -1;
    if (got < *hlen - 4)
        return error_set(s->err, "%s: truncated header: %d dimensions need %zu bytes, file has %zu",
                         s->name, ndim, *hlen, 4 + got);
    out->type = (IdxType)type;
    out->ndim = ndim;
    out->elem_size = esize;
    size_t count = 1;
    for (int d = 0; d < ndim; d++) {
        const unsigned char *p = head + 4 + 4 * d;
        uint32_t v = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
        if (v == 0) return error_set(s->err, "%s: dimension %d is 0 (no data)", s->name, d);
        out->dims[d] = v;
        if (count > IDX_MAX_BYTES / esize / v)
            return error_set(s->err, "%s: header claims more than %zu bytes of data (limit)",
                             s->name, IDX_MAX_BYTES);
        count *= v;
    }
    out->count = count;
    return 0;
}

// The data of a file whose length (total_len, header included) is known: exactly need
// bytes after the header of hlen.
static int read_data_sized(Idx *out, Source *s, size_t need, size_t hlen, size_t total_len) {
    size_t have = total_len >= hlen ? total_len - hlen : 0, got;
    if (have < need)
        return error_set(s->err, "%s: truncated: header claims %zu bytes, file has %zu",
                         s->name, need, have);
    if (have > need)
        return error_set(s->err, "%s: trailing data: header claims %zu bytes, file has %zu",
                         s->name, need, have);
    out->data = xmalloc(need);
    if (source_read(s, out->data, need, &got)) return -1;
    if (got != need)
        return error_set(s->err, "%s: truncated: header claims %zu bytes, file has %zu",
                         s->name, need, got);
    return 0;
}

// The data of a stream of unknown length (gzip): the buffer grows as data arrives, so a
// small file whose header claims gigabytes never makes us allocate them; then the stream
// must end.
static int read_data_streamed(Idx *out, Source *s, size_t need) {
    size_t cap = need < ((size_t)1 << 20) ? need : ((size_t)1 << 20);
    size_t have = 0, got;
    out->data = xmalloc(cap);
    for (;;) {
        if (source_read(s, out->data + have, cap - have, &got)) return -1;
        have += got;
        if (have < cap) break;
        if (cap == need) break;
        cap = cap > need / 2 ? need : cap * 2;
        out->data = xrealloc(out->data, cap);
    }
    if (have < need)
        return error_set(s->err, "%s: truncated: header claims %zu bytes, file has %zu%s",
                         s->name, need, have, s->zs_cut ? " (gzip stream cut short)" : "");
    unsigned char scratch[4096];
    size_t extra = 0;
    while (extra <= IDX_TRAILING_COUNT_MAX) {
        if (source_read(s, scratch, sizeof scratch, &got)) return -1;
        extra += got;
        if (got < sizeof scratch) break;
    }
    if (extra > IDX_TRAILING_COUNT_MAX)
        return error_set(s->err,
                         "%s: trailing data: header claims %zu bytes, file has more than %zu",
                         s->name, need, need + IDX_TRAILING_COUNT_MAX);
    if (extra)
        return error_set(s->err, "%s: trailing data: header claims %zu bytes, file has %zu",
                         s->name, need, need + extra);
    if (s->zs_cut)
        return error_set(s->err, "%s: truncated gzip stream (the trailer is missing)",
                         s->name);
    return 0;
}

// Parses header and data from an opened source. known_size: total_len is the input's
// size in bytes (raw inputs); otherwise (gzip) the size is counted while reading.
static int idx_read_source(Idx *out, Source *s, int known_size, size_t total_len) {
    size_t hlen = 0;
    if (read_header(out, s, &hlen)) return -1;
    const size_t need = out->count * out->elem_size;
    if (known_size ? read_data_sized(out, s, need, hlen, total_len) : read_data_streamed(out, s, need))
        return -1;
    swap_to_host(out->data, out->count, out->elem_size);
    return 0;
}

static int source_start_gzip(Source *s) {
    memset(&s->zs, 0, sizeof s->zs);
    if (inflateInit2(&s->zs, 16 + MAX_WBITS) != Z_OK)
        return error_set(s->err, "%s: gzip: cannot start the inflater", s->name);
    s->zs_ready = 1;
    s->gz = 1;
    if (!s->mem) s->inbuf = xmalloc(IDX_INBUF);
    return 0;
}

static void source_end(Source *s) {
    if (s->zs_ready) inflateEnd(&s->zs);
    free(s->inbuf);
    s->inbuf = NULL;
    s->zs_ready = 0;
}

static int finish(Idx *out, Source *s, int rc) {
    source_end(s);
    if (rc) {
        idx_free(out);
        return -1;
    }
    return 0;
}

int idx_load_memory(Idx *out, const unsigned char *bytes, size_t len, const char *name,
                    Error *err) {
    memset(out, 0, sizeof *out);
    Source s = {.name = name ? name : "(memory)", .err = err, .mem = bytes, .mem_len = len};
    if (!bytes) s.mem = (const unsigned char *)"", s.mem_len = 0;
    int gz = s.mem_len >= 2 && s.mem[0] == 0x1f && s.mem[1] == 0x8b;
    if (gz && source_start_gzip(&s)) return finish(out, &s, -1);
    int rc = idx_read_source(out, &s, !gz, s.mem_len);
    return finish(out, &s, rc);
}

int idx_load(Idx *out, const char *path, Error *err) {
    memset(out, 0, sizeof *out);
    FILE *fp;
    size_t size;
    if (file_open_regular(&fp, &size, path, err)) return -1;
    unsigned char magic[2] = {0, 0};
    size_t m = fread(magic, 1, 2, fp);
    rewind(fp);
    Source s = {.name = path, .err = err, .fp = fp};
    int gz = m == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    int rc = gz ? source_start_gzip(&s) : 0;
    if (!rc) rc = idx_read_source(out, &s, !gz, size);
    fclose(fp);
    return finish(out, &s, rc);
}

void idx_free(Idx *idx) {
    if (!idx) return;
    free(idx->data);
    memset(idx, 0, sizeof *idx);
}

double idx_get(const Idx *idx, size_t i) {
    CHECK(i < idx->count, "index %zu of %zu", i, idx->count);
    const unsigned char *p = idx->data + i * idx->elem_size;
    switch (idx->type) {
    case IDX_U8: return *p;
    case IDX_I8: return (signed char)*p;
    case IDX_I16: { int16_t v; memcpy(&v, p, 2); return v; }
    case IDX_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case IDX_F32: { float v; memcpy(&v, p, 4); return v; }
    case IDX_F64: { double v; memcpy(&v, p, 8); return v; }
    }
    CHECK(0, "bad IDX type %d", (int)idx->type);
    return 0;
}

unsigned char *idx_encode(IdxType type, int ndim, const int64_t *dims, const void *data,
                          size_t *len) {
    size_t esize = idx_type_size(type);
    CHECK(esize > 0 && ndim >= 1 && ndim <= 255);
    size_t count = 1;
    for (int d = 0; d < ndim; d++) {
        CHECK(dims[d] >= 0 && dims[d] <= 0xffffffffLL);
        count *= (size_t)dims[d];
    }
    size_t hlen = 4 + 4 * (size_t)ndim;
    *len = hlen + count * esize;
    unsigned char *buf = xmalloc(*len ? *len : 1);
    buf[0] = 0;
    buf[1] = 0;
    buf[2] = (unsigned char)type;
    buf[3] = (unsigned char)ndim;
    for (int d = 0; d < ndim; d++) {
        uint32_t v = (uint32_t)dims[d];
        unsigned char *p = buf + 4 + 4 * d;
        p[0] = v >> 24, p[1] = v >> 16, p[2] = v >> 8, p[3] = (unsigned char)v;
    }
    memcpy(buf + hlen, data, count * esize);
    swap_to_host(buf + hlen, count, esize);  // host -> big-endian is the same swap
    return buf;
}
