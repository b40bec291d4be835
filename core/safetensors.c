#include "core/safetensors.h"

#include <cJSON.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/text_escape.h"
#include "core/fileio.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c assumes a little-endian machine (the format stores little-endian data)"
#endif

// The Python safetensors library refuses headers above 100 MB; so do we. cJSON 1.7.15
// (Debian 12) refuses nesting deeper than CJSON_NESTING_LIMIT (1000) by itself, so a
// hostile "[[[[..." header fails to parse instead of overflowing the stack.
#define HEADER_MAX_BYTES (100u * 1000u * 1000u)
#define NAME_CAP ((int)sizeof(((SafetensorsTensor *)0)->name))
#define MAX_DIMS ((int)(sizeof(((SafetensorsTensor *)0)->shape) / sizeof(int64_t)))

typedef struct {
    void *data;            // safetensors_load: the float tensors' values, 64-byte aligned
    cJSON *root;           // the parsed header: metadata strings point into it
    FILE *fp;              // safetensors_open: the open file
    unsigned char *mem;    // safetensors_open_memory: a copy of the bytes
    size_t mem_len;
    uint64_t data_start;   // where the data section starts (8 + header length)
    char name[512];        // the path (or name) for messages
} Internal;

static const struct {
    const char *name;
    size_t bytes;
} DTYPES[] = {
    [ST_F32] = {"F32", 4}, [ST_F16] = {"F16", 2}, [ST_BF16] = {"BF16", 2},
    [ST_I8] = {"I8", 1},   [ST_U8] = {"U8", 1},   [ST_I16] = {"I16", 2},
    [ST_U16] = {"U16", 2}, [ST_I32] = {"I32", 4}, [ST_U32] = {"U32", 4},
    [ST_I64] = {"I64", 8}, [ST_U64] = {"U64", 8}, [ST_BOOL] = {"BOOL", 1},
};
#define N_DTYPES ((int)(sizeof DTYPES / sizeof DTYPES[0]))

const char *safetensors_dtype_name(SafetensorsDtype d) {
    return (int)d >= 0 && (int)d < N_DTYPES ? DTYPES[d].name : "?";
}

// Messages quote names and dtypes from the header, where JSON escapes allow any character:
// error_set writes every message in core/text_escape.h's field form (\n, \t, \xNN, ...),
// so each stays one line of valid UTF-8 (found by tests/fuzz/fuzz_safetensors.c).

// ---------------------------------------------------------------------------- dtypes

float safetensors_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, bits;
    if (e == 0x1f) {
        bits = sign | 0x7f800000u | (m << 13);  // infinity, NaN (payload kept)
    } else if (e) {
        bits = sign | ((e + 112) << 23) | (m << 13);  // exponent bias 15 -> 127
    } else if (!m) {
        bits = sign;  // signed zero
    } else {
        // Subnormal m 2^-24: shift the leading 1 up to bit 10, lowering the exponent.
        int s = 0;
        while (!(m & 0x400)) m <<= 1, s++;
        bits = sign | ((uint32_t)(113 - s) << 23) | ((m & 0x3ff) << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

float safetensors_f16_to_f32_ref(uint16_t h) {
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0x1f ? (m ? NAN : INFINITY) : e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    return (float)((h & 0x8000) ? -v : v);
}

float safetensors_bf16_to_f32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

// dst (n floats) from n values of dtype d at src (any alignment).
static void widen(float *dst, const unsigned char *src, size_t n, SafetensorsDtype d) {
    if (d == ST_F32) {
        memcpy(dst, src, n * sizeof(float));
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint16_t h = (uint16_t)(src[2 * i] | src[2 * i + 1] << 8);
        dst[i] = d == ST_F16 ? safetensors_f16_to_f32(h) : safetensors_bf16_to_f32(h);
    }
}

// ---------------------------------------------------------------------------- writing

typedef struct {
    char name[NAME_CAP];
    const BlockTensor *t;
    const float *data;
} Entry;

static int write_all(AtomicFile *af, const void *p, size_t n, const char *path, Error *err) {
    if (n && fwrite(p, 1, n, af->fp) != n) {
        int e = errno ? errno : EIO;
        atomic_abort(af);
        return error_set(err, "%s: write failed: %s (the previous file is unchanged)", path,
                         strerror(e));
    }
    return 0;
}

// The header's entry of tensor e: its dtype, shape and byte range from *offset, which moves
// past it.
static void add_header_entry(cJSON *root, const Entry *e, size_t *offset) {
    cJSON *obj = cJSON_CreateObject();
    cJSON_AddItemToObject(root, e->name, obj);
    cJSON_AddStringToObject(obj, "dtype", "F32");
    cJSON *shape = cJSON_AddArrayToObject(obj, "shape");
    for (int d = 0; d < e->t->ndim; d++)
        cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)e->t->shape[d]));
    cJSON *offs = cJSON_AddArrayToObject(obj, "data_offsets");
    size_t bytes = e->t->numel * sizeof(float);
    cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)*offset));
    cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)(*offset + bytes)));
    *offset += bytes;
}

// Fills entries (one per tensor of the blocks, in order, named prefix + name) and their
// header entries in root: 0, or -1 with err for a name too long, repeated or reserved.
static int collect_entries(Entry *entries, cJSON *root, const Block *const *blocks,
                           const char *const *prefixes, int n_blocks, const char *path,
                           Error *err) {
    int k = 0;
    size_t offset = 0;
    for (int i = 0; i < n_blocks; i++) {
        const Block *b = blocks[i];
        const char *prefix = prefixes && prefixes[i] ? prefixes[i] : "";
        CHECK(b->data || b->count == 0, "safetensors_save: block %d is not allocated", i);
        for (int j = 0; j < b->count; j++, k++) {
            Entry *e = &entries[k];
            e->t = &b->tensors[j];
            e->data = b->data + e->t->offset;
            int w = snprintf(e->name, sizeof e->name, "%s%s", prefix, e->t->name);
            if (w < 0 || w >= NAME_CAP)
                return error_set(err, "%s: tensor name too long: %s%s", path, prefix, e->t->name);
            if (cJSON_GetObjectItemCaseSensitive(root, e->name) || strcmp(e->name, "__metadata__") == 0)
                return error_set(err, "%s: duplicate or reserved tensor name %s", path, e->name);
            add_header_entry(root, e, &offset);
        }
    }
    return 0;
}

// Writes the file whole or not at all (core/fileio.h's atomic replace): the header's
// length (8 bytes, little-endian), the header json padded with spaces to a multiple of 8,
// then the n entries' data in order.
static int write_file(const char *path, const char *json, const Entry *entries, int n,
                      Error *err) {
    size_t len = strlen(json);
    size_t padded = (len + 7) & ~(size_t)7;  // spaces are allowed padding after the JSON
    unsigned char head[8];
    for (int i = 0; i < 8; i++) head[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    char spaces[8] = "       ";
    AtomicFile af;
    if (atomic_open(&af, path, err) || write_all(&af, head, 8, path, err) ||
        write_all(&af, json, len, path, err) || write_all(&af, spaces, padded - len, path, err))
        return -1;
    for (int i = 0; i < n; i++)
        if (write_all(&af, entries[i].data, entries[i].t->numel * sizeof(float), path, err))
            return -1;
    return atomic_commit(&af, err);
}

int safetensors_save(const char *path, const Block *const *blocks, const char *const *prefixes,
                     int n_blocks, const SafetensorsMeta *meta, int n_meta, Error *err) {
    int total = 0;
    for (int i = 0; i < n_blocks; i++) total += blocks[i]->count;
    Entry *entries = xcalloc(total > 0 ? (size_t)total : 1, sizeof *entries);
    cJSON *root = cJSON_CreateObject();
    CHECK(root);
    int status = collect_entries(entries, root, blocks, prefixes, n_blocks, path, err);
    if (!status && n_meta > 0) {
        cJSON *m = cJSON_AddObjectToObject(root, "__metadata__");
        for (int i = 0; i < n_meta; i++) {
            CHECK(meta[i].key && meta[i].value);
            cJSON_AddStringToObject(m, meta[i].key, meta[i].value);
        }
    }
    if (!status) {
        char *json = cJSON_PrintUnformatted(root);
        CHECK(json, "out of memory printing the safetensors header");
        status = write_file(path, json, entries, total, err);
        free(json);
    }
    cJSON_Delete(root);
    free(entries);
    return status;
}

// ---------------------------------------------------------------------------- reading

// A JSON number that is an integer in [0, 2^53]; -1 otherwise.
static int64_t json_count(const cJSON *x) {
    if (!cJSON_IsNumber(x)) return -1;
    double d = x->valuedouble;
    if (!(d >= 0.0) || d > 9007199254740992.0 || d != floor(d)) return -1;
    return (int64_t)d;
}

typedef struct {
    size_t begin, end;
    int index;
} Span;

static int span_cmp(const void *a, const void *b) {
    const Span *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

// Validates one tensor entry and fills t (data offsets into span).
static int parse_entry(SafetensorsTensor *t, Span *span, const cJSON *item, size_t data_len,
                       const char *path, Error *err) {
    const char *name = item->string;
    if (!cJSON_IsObject(item))
        return error_set(err, "%s: entry '%s' is not an object", path, name);
    if ((int)strlen(name) >= NAME_CAP)
        return error_set(err, "%s: tensor name longer than %d characters: '%.40s...'", path,
                         NAME_CAP - 1, name);
    snprintf(t->name, sizeof t->name, "%s", name);
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(item, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
    if (!cJSON_IsString(dtype))
        return error_set(err, "%s: tensor '%s': missing or non-string dtype", path, name);
    int dt = -1;
    for (int i = 0; i < N_DTYPES && dt < 0; i++)
        if (strcmp(dtype->valuestring, DTYPES[i].name) == 0) dt = i;
    if (dt < 0)
        return error_set(err,
                         "%s: tensor '%s': dtype '%.16s' not supported (F32, F16, BF16; integer "
                         "tensors are read past)", path, name, dtype->valuestring);
    t->dtype = (SafetensorsDtype)dt;
    const size_t esize = DTYPES[dt].bytes;
    if (!cJSON_IsArray(shape))
        return error_set(err, "%s: tensor '%s': missing or non-array shape", path, name);
    int ndim = cJSON_GetArraySize(shape);
    if (ndim > MAX_DIMS)
        return error_set(err, "%s: tensor '%s': %d dimensions, at most %d supported", path, name,
                         ndim, MAX_DIMS);
    t->ndim = ndim;
    size_t numel = 1;
    int d = 0;
    const cJSON *dim;
    cJSON_ArrayForEach(dim, shape) {
        int64_t v = json_count(dim);
        if (v < 0)
            return error_set(err, "%s: tensor '%s': shape[%d] is not a non-negative integer",
                             path, name, d);
        t->shape[d++] = v;
        if (v != 0 && numel > SIZE_MAX / 8 / (uint64_t)v)
            return error_set(err, "%s: tensor '%s': element count overflows", path, name);
        numel *= (size_t)v;
    }
    t->numel = numel;
    if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2)
        return error_set(err, "%s: tensor '%s': data_offsets must be [begin, end]", path, name);
    int64_t b = json_count(cJSON_GetArrayItem(offs, 0));
    int64_t e = json_count(cJSON_GetArrayItem(offs, 1));
    if (b < 0 || e < 0)
        return error_set(err, "%s: tensor '%s': data_offsets are not non-negative integers",
                         path, name);
    if (b > e || (uint64_t)e > data_len)
        return error_set(err,
                         "%s: tensor '%s': data_offsets [%lld, %lld] out of range (data is %zu bytes)",
                         path, name, (long long)b, (long long)e, data_len);
    if ((uint64_t)(e - b) != (uint64_t)numel * esize)
        return error_set(err, "%s: tensor '%s': %lld bytes of data for %zu %s elements", path,
                         name, (long long)(e - b), numel, DTYPES[dt].name);
    t->offset = (size_t)b;
    span->begin = (size_t)b;
    span->end = (size_t)e;
    return 0;
}

// The bytes being read: an open file, or memory (safetensors_load_memory).
typedef struct {
    FILE *fp;
    const unsigned char *mem;
    size_t len, pos;
} Reader;

static int tensor_name_cmp(const void *a, const void *b) {
    return strcmp((*(const SafetensorsTensor *const *)a)->name,
                  (*(const SafetensorsTensor *const *)b)->name);
}

static int read_exact(Reader *r, void *p, size_t n) {
    if (r->fp) return fread(p, 1, n, r->fp) == n ? 0 : -1;
    if (n > r->len - r->pos) return -1;
    if (n) memcpy(p, r->mem + r->pos, n);
    r->pos += n;
    return 0;
}

// header_only: validate the header and stop before the data (safetensors_open).
static int load_from(SafetensorsFile *f, Reader *r, uint64_t size, const char *path,
                     int header_only, Error *err);

int safetensors_load(SafetensorsFile *f, const char *path, Error *err) {
    memset(f, 0, sizeof *f);
    FILE *fp;
    size_t size;
    if (file_open_regular(&fp, &size, path, err)) return -1;
    Reader r = {.fp = fp};
    int status = load_from(f, &r, (uint64_t)size, path, 0, err);
    fclose(fp);
    return status;
}

int safetensors_load_memory(SafetensorsFile *f, const unsigned char *bytes, size_t len,
                            const char *name, Error *err) {
    memset(f, 0, sizeof *f);
    Reader r = {.mem = bytes, .len = bytes ? len : 0};
    return load_from(f, &r, (uint64_t)r.len, name ? name : "(memory)", 0, err);
}

int safetensors_open(SafetensorsFile *f, const char *path, Error *err) {
    memset(f, 0, sizeof *f);
    FILE *fp;
    size_t size;
    if (file_open_regular(&fp, &size, path, err)) return -1;
    Reader r = {.fp = fp};
    if (load_from(f, &r, (uint64_t)size, path, 1, err)) {
        fclose(fp);
        return -1;
    }
    ((Internal *)f->buffer_)->fp = fp;
    return 0;
}

int safetensors_open_memory(SafetensorsFile *f, const unsigned char *bytes, size_t len,
                            const char *name, Error *err) {
    memset(f, 0, sizeof *f);
    Reader r = {.mem = bytes, .len = bytes ? len : 0};
    if (load_from(f, &r, (uint64_t)r.len, name ? name : "(memory)", 1, err)) return -1;
    Internal *in = f->buffer_;
    in->mem = xmalloc(r.len ? r.len : 1);
    if (r.len) memcpy(in->mem, bytes, r.len);
    in->mem_len = r.len;
    return 0;
}

// A weight file's values must be numbers: a NaN or an infinity read in poisons every
// forward pass. 0, or -1 naming the file, the tensor and the first such value's index.
static int check_finite(const float *x, size_t n, const char *path, const char *name,
                        Error *err) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return error_set(err, "%s: tensor '%s' holds NaN or inf (value %zu of %zu is %g)",
                             path, name, i, n, (double)x[i]);
    return 0;
}

static int read_floats(float *dst, const SafetensorsFile *f, const SafetensorsTensor *t,
                       Error *err) {
    const Internal *in = f->buffer_;
    CHECK(in && t >= f->tensors && t < f->tensors + f->count, "tensor not of this file");
    if (!safetensors_dtype_is_float(t->dtype))
        return error_set(err, "%s: tensor '%s': dtype %s is not a floating-point type", in->name,
                         t->name, safetensors_dtype_name(t->dtype));
    if (t->numel == 0) return 0;
    if (t->data) {
        memcpy(dst, t->data, t->numel * sizeof(float));
        return 0;
    }
    const size_t esize = DTYPES[t->dtype].bytes, bytes = t->numel * esize;
    const uint64_t at = in->data_start + t->offset;
    if (in->mem) {
        CHECK(at + bytes <= in->mem_len, "validated at open");
        widen(dst, in->mem + at, t->numel, t->dtype);
        return 0;
    }
    CHECK(in->fp, "safetensors_read_floats on a file neither loaded nor open");
    if (fseeko(in->fp, (off_t)at, SEEK_SET) != 0)
        return error_set(err, "%s: tensor '%s': seek failed: %s", in->name, t->name,
                         strerror(errno));
    if (t->dtype == ST_F32) {
        if (fread(dst, 1, bytes, in->fp) != bytes)
            return error_set(err, "%s: tensor '%s': read failed (file shorter than when opened?)",
                             in->name, t->name);
        return 0;
    }
    // Half-width values through a small buffer, widened in place.
    unsigned char buf[1 << 14];
    for (size_t done = 0; done < t->numel;) {
        size_t n = t->numel - done < sizeof buf / esize ? t->numel - done : sizeof buf / esize;
        if (fread(buf, esize, n, in->fp) != n)
            return error_set(err, "%s: tensor '%s': read failed (file shorter than when opened?)",
                             in->name, t->name);
        widen(dst + done, buf, n, t->dtype);
        done += n;
    }
    return 0;
}

int safetensors_read_floats(float *dst, const SafetensorsFile *f, const SafetensorsTensor *t,
                            Error *err) {
    if (read_floats(dst, f, t, err)) return -1;
    const Internal *in = f->buffer_;
    return check_finite(dst, t->numel, in->name, t->name, err);
}

// The 8-byte header length and the header: a JSON object, only white space after it (the
// format pads with spaces), parsed into in->root. *len: the header's length in bytes.
static int read_header(Internal *in, Reader *r, uint64_t size, const char *path, uint64_t *len,
                       Error *err) {
    unsigned char head[8];
    if (size < 8 || read_exact(r, head, 8))
        return error_set(err, "%s: truncated: %llu bytes, too short for a safetensors header",
                         path, (unsigned long long)size);
    uint64_t n = 0;
    for (int i = 0; i < 8; i++) n |= (uint64_t)head[i] << (8 * i);
    if (n > HEADER_MAX_BYTES)
        return error_set(err, "%s: header length %llu is absurd (limit %u bytes); not a safetensors file?",
                         path, (unsigned long long)n, HEADER_MAX_BYTES);
    if (n > size - 8)
        return error_set(err, "%s: header length %llu runs past the end of the file (%llu bytes)",
                         path, (unsigned long long)n, (unsigned long long)size);
    if (n < 2)
        return error_set(err, "%s: header of %llu bytes cannot hold a JSON object", path,
                         (unsigned long long)n);
    *len = n;
    char *header = xmalloc((size_t)n + 1);
    int rc = 0;
    if (read_exact(r, header, (size_t)n)) {
        free(header);
        return error_set(err, "%s: read error in the header", path);
    }
    header[n] = 0;
    const char *json_end = NULL;
    in->root = cJSON_ParseWithLengthOpts(header, (size_t)n, &json_end, 0);  // copies the text
    if (!in->root) {
        const char *at = cJSON_GetErrorPtr();
        long pos = at && at >= header && at <= header + n ? (long)(at - header) : -1;
        rc = error_set(err, "%s: header is not valid JSON (near byte %ld of %llu)", path, pos,
                       (unsigned long long)n);
    } else if (!cJSON_IsObject(in->root)) {
        rc = error_set(err, "%s: header is not a JSON object", path);
    }
    for (const char *c = json_end; rc == 0 && c && c < header + n; c++)
        if (*c != ' ' && *c != '\t' && *c != '\n' && *c != '\r')
            rc = error_set(err, "%s: unexpected bytes after the header JSON (byte %ld)", path,
                           (long)(c - header));
    free(header);
    return rc;
}

// Names listed twice, found by sorting: comparing every pair took 53 s for a hostile header
// of 80,000 entries (4.8 MB; headers may reach 100 MB).
static int check_names_unique(const SafetensorsFile *f, const char *path, Error *err) {
    if (f->count < 2) return 0;
    const SafetensorsTensor **by_name = xmalloc((size_t)f->count * sizeof *by_name);
    for (int i = 0; i < f->count; i++) by_name[i] = &f->tensors[i];
    qsort(by_name, (size_t)f->count, sizeof *by_name, tensor_name_cmp);
    const char *dup = NULL;
    for (int i = 1; i < f->count && !dup; i++)
        if (strcmp(by_name[i - 1]->name, by_name[i]->name) == 0) dup = by_name[i]->name;
    free(by_name);
    return dup ? error_set(err, "%s: tensor '%s' listed twice", path, dup) : 0;
}

// __metadata__: an object of strings, into f->meta (pointing into the parsed header).
static int read_metadata(SafetensorsFile *f, const cJSON *metadata, const char *path, Error *err) {
    if (!cJSON_IsObject(metadata)) return error_set(err, "%s: __metadata__ is not an object", path);
    int m = cJSON_GetArraySize(metadata);
    f->meta = xcalloc(m > 0 ? (size_t)m : 1, sizeof *f->meta);
    const cJSON *item;
    cJSON_ArrayForEach(item, metadata) {
        if (!cJSON_IsString(item))
            return error_set(err, "%s: __metadata__ value of '%s' is not a string", path,
                             item->string);
        f->meta[f->n_meta].key = item->string;
        f->meta[f->n_meta].value = item->valuestring;
        f->n_meta++;
    }
    return 0;
}

// The header's entries: the tensors into f->tensors (f->count of them, each name once) with
// their byte spans in a data section of data_len bytes into spans (f->count, malloc'd),
// and __metadata__ into f->meta.
static int read_entries(SafetensorsFile *f, const cJSON *root, size_t data_len, Span **spans,
                        const char *path, Error *err) {
    int count = 0;
    const cJSON *item, *metadata = NULL;
    cJSON_ArrayForEach(item, root) {
        if (strcmp(item->string, "__metadata__") != 0) count++;
    }
    f->tensors = xcalloc(count > 0 ? (size_t)count : 1, sizeof *f->tensors);
    *spans = xcalloc(count > 0 ? (size_t)count : 1, sizeof **spans);
    int k = 0;
    cJSON_ArrayForEach(item, root) {
        if (strcmp(item->string, "__metadata__") == 0) {
            if (metadata) return error_set(err, "%s: __metadata__ given twice", path);
            metadata = item;
            continue;
        }
        if (parse_entry(&f->tensors[k], &(*spans)[k], item, data_len, path, err)) return -1;
        (*spans)[k].index = k;
        k++;
    }
    f->count = k;
    if (check_names_unique(f, path, err)) return -1;
    return metadata ? read_metadata(f, metadata, path, err) : 0;
}

// No two tensors may share bytes (empty tensors share nothing); spans come back sorted.
static int check_no_overlap(const SafetensorsFile *f, Span *spans, const char *path, Error *err) {
    qsort(spans, (size_t)f->count, sizeof *spans, span_cmp);
    size_t reach = 0;
    int reach_index = -1;
    for (int i = 0; i < f->count; i++) {
        if (spans[i].begin == spans[i].end) continue;
        if (reach_index >= 0 && spans[i].begin < reach)
            return error_set(err, "%s: tensors '%s' and '%s' overlap in the data", path,
                             f->tensors[reach_index].name, f->tensors[spans[i].index].name);
        reach = spans[i].end;
        reach_index = spans[i].index;
    }
    return 0;
}

static _Noreturn void out_of_memory_reading(size_t bytes, const char *path) {
    char what[1200];
    snprintf(what, sizeof what, "the tensors of %s", path);
    check_out_of_memory(bytes, what);
}

// The data, into a 64-byte aligned buffer (in->data). When every tensor is F32 at an offset
// that is a multiple of 4 (what we and Python write), the tensors point into it; otherwise
// (F16, BF16, integer tensors, offsets not multiples of 4: legal) the float tensors are
// widened or copied into a second aligned buffer and the raw bytes dropped.
static int read_data(SafetensorsFile *f, Internal *in, Reader *r, const Span *spans,
                     size_t data_len, const char *path, Error *err) {
    size_t alloc = (data_len + 63) & ~(size_t)63;
    in->data = aligned_alloc(64, alloc ? alloc : 64);
    if (!in->data) out_of_memory_reading(alloc, path);
    if (read_exact(r, in->data, data_len))
        return error_set(err, "%s: read error in the tensor data", path);
    int repack = 0;
    size_t floats = 0;
    for (int i = 0; i < f->count; i++) {
        const SafetensorsTensor *t = &f->tensors[spans[i].index];
        repack |= t->dtype != ST_F32 || spans[i].begin % sizeof(float) != 0;
        if (safetensors_dtype_is_float(t->dtype)) floats += t->numel;
    }
    if (!repack) {
        for (int i = 0; i < f->count; i++)
            f->tensors[spans[i].index].data =
                (const float *)(const void *)((unsigned char *)in->data + spans[i].begin);
        return 0;
    }
    size_t alloc2 = (floats * sizeof(float) + 63) & ~(size_t)63;
    float *packed = aligned_alloc(64, alloc2 ? alloc2 : 64);
    if (!packed) out_of_memory_reading(alloc2, path);
    size_t at = 0;
    for (int i = 0; i < f->count; i++) {
        SafetensorsTensor *t = &f->tensors[spans[i].index];
        if (!safetensors_dtype_is_float(t->dtype)) continue;
        widen(packed + at, (const unsigned char *)in->data + spans[i].begin, t->numel, t->dtype);
        t->data = packed + at;
        at += t->numel;
    }
    free(in->data);
    in->data = packed;
    return 0;
}

// The stages in order; header_only stops before the data. On failure f is freed.
static int load_from(SafetensorsFile *f, Reader *r, uint64_t size, const char *path,
                     int header_only, Error *err) {
    Internal *in = xcalloc(1, sizeof *in);
    snprintf(in->name, sizeof in->name, "%s", path);
    f->buffer_ = in;
    Span *spans = NULL;
    uint64_t n = 0;
    int rc = read_header(in, r, size, path, &n, err);
    const size_t data_len = rc == 0 ? (size_t)(size - 8 - n) : 0;
    if (rc == 0) rc = read_entries(f, in->root, data_len, &spans, path, err);
    if (rc == 0) rc = check_no_overlap(f, spans, path, err);
    in->data_start = 8 + n;
    if (rc == 0 && !header_only) rc = read_data(f, in, r, spans, data_len, path, err);
    free(spans);
    if (rc != 0) safetensors_free(f);
    return rc;
}

void safetensors_free(SafetensorsFile *f) {
    Internal *in = f->buffer_;
    if (in) {
        free(in->data);
        cJSON_Delete(in->root);
        if (in->fp) fclose(in->fp);
        free(in->mem);
        free(in);
    }
    free(f->tensors);
    free(f->meta);
    memset(f, 0, sizeof *f);
}

const SafetensorsTensor *safetensors_find(const SafetensorsFile *f, const char *name) {
    for (int i = 0; i < f->count; i++)
        if (strcmp(f->tensors[i].name, name) == 0) return &f->tensors[i];
    return NULL;
}

const char *safetensors_meta(const SafetensorsFile *f, const char *key) {
    for (int i = 0; i < f->n_meta; i++)
        if (strcmp(f->meta[i].key, key) == 0) return f->meta[i].value;
    return NULL;
}

int safetensors_meta_long(const SafetensorsFile *f, const char *path, const char *key,
                          const char *kind, long lo, long hi, long *out, Error *err) {
    const char *s = safetensors_meta(f, key);
    if (!s && kind) return error_set(err, "%s: not %s (no \"%s\" in __metadata__)", path, kind, key);
    if (!s) return error_set(err, "%s: no \"%s\" in __metadata__", path, key);
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end) return error_set(err, "%s: metadata %s = '%s' is not an integer", path, key, s);
    if (v < lo || v > hi) return error_set(err, "%s: metadata %s = %ld out of range [%ld, %ld]", path, key, v, lo, hi);
    *out = v;
    return 0;
}

int safetensors_meta_double(const SafetensorsFile *f, const char *path, const char *key,
                            double *out, Error *err) {
    const char *s = safetensors_meta(f, key);
    if (!s) return error_set(err, "%s: no \"%s\" in __metadata__", path, key);
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !isfinite(v)) return error_set(err, "%s: metadata %s = '%s' is not a number", path, key, s);
    *out = v;
    return 0;
}

// The double, then refused where it overflows a float (strtof would have given inf). The
// values this reads were written with %.9g from floats, which read back exactly either way.
int safetensors_meta_float(const SafetensorsFile *f, const char *path, const char *key,
                           float *out, Error *err) {
    double v;
    if (safetensors_meta_double(f, path, key, &v, err)) return -1;
    if (fabs(v) > FLT_MAX)
        return error_set(err, "%s: metadata %s = '%s' is not a number", path, key,
                         safetensors_meta(f, key));
    *out = (float)v;
    return 0;
}

static void format_shape(char *buf, size_t cap, int ndim, const int64_t *shape) {
    size_t len = 0;
    buf[0] = 0;
    len += (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < ndim && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (len < cap) snprintf(buf + len, cap - len, "]");
}

// The tensor of f that holds block tensor t (prefix + its name), checked: present, of a
// float dtype and of t's shape. NULL after a failure naming it.
static const SafetensorsTensor *block_tensor_in_file(const BlockTensor *t, const char *prefix,
                                                     const SafetensorsFile *f, const char *path,
                                                     Error *err) {
    char name[NAME_CAP + BLOCK_NAME_LEN];
    snprintf(name, sizeof name, "%s%s", prefix ? prefix : "", t->name);
    const SafetensorsTensor *s = safetensors_find(f, name);
    if (!s) {
        error_set(err, "%s: missing tensor '%s'", path, name);
        return NULL;
    }
    if (!safetensors_dtype_is_float(s->dtype)) {
        error_set(err, "%s: tensor '%s' has dtype %s, not a floating-point type", path, name,
                  safetensors_dtype_name(s->dtype));
        return NULL;
    }
    int same = s->ndim == t->ndim;
    for (int d = 0; same && d < t->ndim; d++) same = s->shape[d] == t->shape[d];
    if (!same) {
        char have[128], want[128];
        format_shape(have, sizeof have, s->ndim, s->shape);
        format_shape(want, sizeof want, t->ndim, t->shape);
        error_set(err, "%s: tensor '%s' has shape %s, the model expects %s", path, name, have, want);
        return NULL;
    }
    return s;
}

int safetensors_check_block(const Block *b, const char *prefix, const SafetensorsFile *f,
                            const char *path, Error *err) {
    for (int i = 0; i < b->count; i++)
        if (!block_tensor_in_file(&b->tensors[i], prefix, f, path, err)) return -1;
    return 0;
}

int safetensors_alloc_read_block(Block *b, const char *prefix, const SafetensorsFile *f,
                                 const char *path, Error *err) {
    if (safetensors_check_block(b, prefix, f, path, err) == 0) {
        block_alloc(b);
        if (safetensors_read_block(b, prefix, f, path, err) == 0) return 0;
    }
    block_free(b);
    return -1;
}

int safetensors_read_block(Block *b, const char *prefix, const SafetensorsFile *f,
                           const char *path, Error *err) {
    CHECK(b->data || b->count == 0, "safetensors_read_block: block not allocated");
    for (int i = 0; i < b->count; i++) {
        const BlockTensor *t = &b->tensors[i];
        const SafetensorsTensor *s = block_tensor_in_file(t, prefix, f, path, err);
        if (!s) return -1;
        CHECK(s->data || !s->numel, "safetensors_read_block needs a file from safetensors_load");
        if (!t->numel) continue;
        memcpy(b->data + t->offset, s->data, t->numel * sizeof(float));
        if (check_finite(b->data + t->offset, t->numel, path, s->name, err)) return -1;
    }
    return 0;
}
