#include "datasets/featcache.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/check.h"
#include "core/fileio.h"
#include "vision/preprocess.h"

#define FEATCACHE_FORMAT "attend-features"
#define FEATCACHE_VERSION "1"
#define ZERO_SHA "0000000000000000000000000000000000000000000000000000000000000000"

// ---------------------------------------------------------------------------- small parts

void featcache_preprocess_text(char *buf, size_t cap, int S) {
    snprintf(buf, cap,
             "torchvision ImageNet: shorter side to %d (antialiased bilinear), centre crop %d, "
             "RGB in [0,1], mean 0.485,0.456,0.406, std 0.229,0.224,0.225",
             imagenet_resize_for(S), S);
}

int featcache_dtype_parse(const char *text, FeatDtype *out) {
    if (!strcmp(text, "f16") || !strcmp(text, "F16")) *out = FEAT_F16;
    else if (!strcmp(text, "f32") || !strcmp(text, "F32")) *out = FEAT_F32;
    else return -1;
    return 0;
}

const char *featcache_dtype_name(FeatDtype d) { return d == FEAT_F16 ? "F16" : "F32"; }

static size_t dtype_bytes_(FeatDtype d) { return d == FEAT_F16 ? 2 : 4; }

uint16_t featcache_f32_to_f16(float x) {
    uint32_t b;
    memcpy(&b, &x, 4);
    uint32_t sign = (b >> 16) & 0x8000u, e = (b >> 23) & 0xffu, m = b & 0x7fffffu;
    if (e == 0xff) return (uint16_t)(sign | 0x7c00u | (m ? 0x200u | (m >> 13) : 0u));
    int32_t he = (int32_t)e - 127 + 15;
    if (he >= 31) return (uint16_t)(sign | 0x7c00u);
    if (he <= 0) {  // a half subnormal (or zero): value = hm 2^-24
        if (he < -10) return (uint16_t)sign;
        uint32_t full = m | 0x800000u;
        int shift = 14 - he;
        uint32_t hm = full >> shift, rem = full & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (hm & 1u))) hm++;
        return (uint16_t)(sign | hm);
    }
    uint32_t hm = m >> 13, rem = m & 0x1fffu;
    uint32_t h = sign | ((uint32_t)he << 10) | hm;
    if (rem > 0x1000u || (rem == 0x1000u && (hm & 1u))) h++;  // a carry may reach infinity
    return (uint16_t)h;
}

uint16_t featcache_f32_to_f16_ref(float x) {
    if (isnan(x)) return featcache_f32_to_f16(x);
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    double a = fabs((double)x);
    // 65520 = the largest half (65504) plus half its spacing: from there on, infinity.
    if (a >= 65520.0) return sign | 0x7c00;
    uint16_t best = 0;
    double bd = INFINITY;
    for (uint32_t h = 0; h < 0x7c00; h++) {
        double d = fabs((double)safetensors_f16_to_f32_ref((uint16_t)h) - a);
        if (d < bd || (d == bd && !(h & 1))) bd = d, best = (uint16_t)h;
    }
    return sign | best;
}

// A growing string.
typedef struct {
    char *s;
    size_t n, cap;
} Str;

static void str_add(Str *b, const char *text, size_t len) {
    if (b->n + len + 1 > b->cap) {
        b->cap = (b->n + len + 1) * 2;
        b->s = xrealloc(b->s, b->cap);
    }
    memcpy(b->s + b->n, text, len);
    b->n += len;
    b->s[b->n] = 0;
}
static void str_puts(Str *b, const char *text) { str_add(b, text, strlen(text)); }

// text as a JSON string literal (quotes included).
static void str_json(Str *b, const char *text) {
    str_puts(b, "\"");
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\', esc[1] = (char)*p, esc[2] = 0;
            str_puts(b, esc);
        } else if (*p < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            str_puts(b, esc);
        } else {
            str_add(b, (const char *)p, 1);
        }
    }
    str_puts(b, "\"");
}

// The image list as a JSON array, and its hash.
static char *ids_json_(const FeatCacheInfo *in) {
    Str b = {0};
    str_puts(&b, "[");
    for (int i = 0; i < in->n; i++) {
        if (i) str_puts(&b, ",");
        str_json(&b, in->ids[i]);
    }
    str_puts(&b, "]");
    return b.s;
}

static void ids_sha_(char hex[SHA256_HEX_CHARS + 1], const char *const *ids, int n) {
    Sha256 s;
    sha256_init(&s);
    for (int i = 0; i < n; i++) {
        sha256_update(&s, ids[i], strlen(ids[i]));
        sha256_update(&s, "\n", 1);
    }
    unsigned char d[SHA256_DIGEST_BYTES];
    sha256_final(&s, d);
    sha256_hex(hex, d);
}

enum { META_COUNT = 14 };

typedef struct {
    const char *key[META_COUNT];
    char *value[META_COUNT];  // owned
} MetaList;

static void meta_free_(MetaList *m) {
    for (int i = 0; i < META_COUNT; i++) free(m->value[i]);
}

static char *dup_(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = xmalloc(n);
    memcpy(d, s, n);
    return d;
}

// Up to 80 bytes of a header value for a message: control characters become '?', so the
// message stays one line.
static const char *printable_(char buf[96], const char *v) {
    size_t i = 0;
    for (; v[i] && i < 80; i++) buf[i] = (unsigned char)v[i] < 0x20 || v[i] == 0x7f ? '?' : v[i];
    buf[i] = 0;
    return buf;
}


// The metadata of info in header order (complete and annotations.sha256 last).
static void meta_build_(MetaList *m, const FeatCacheInfo *in, int complete, const char *sha) {
    char num[32], ext[96], hex[SHA256_HEX_CHARS + 1];
    snprintf(num, sizeof num, "%d", in->image_size);
    snprintf(ext, sizeof ext, "batch=%d threads=%d group=%d", in->batch, in->threads, in->group);
    ids_sha_(hex, in->ids, in->n);
    const char *keys[META_COUNT] = {"format", "version", "encoder", "encoder.sha256",
                                    "encoder.weights", "encoder.description", "image_size",
                                    "preprocess", "data", "images", "images.sha256", "extraction",
                                    "complete", "annotations.sha256"};
    char *vals[META_COUNT] = {dup_(FEATCACHE_FORMAT), dup_(FEATCACHE_VERSION), dup_(in->encoder),
                              dup_(in->encoder_sha256), dup_(in->encoder_weights),
                              dup_(in->encoder_description), dup_(num), dup_(in->preprocess),
                              dup_(in->data), ids_json_(in), dup_(hex), dup_(ext),
                              dup_(complete ? "1" : "0"), dup_(sha)};
    for (int i = 0; i < META_COUNT; i++) m->key[i] = keys[i], m->value[i] = vals[i];
}

// The header bytes (8-byte length, JSON, spaces to a multiple of 8), xmalloc'd.
static unsigned char *header_build_(size_t *len, const FeatCacheInfo *in, int complete,
                                    const char *sha) {
    MetaList m;
    meta_build_(&m, in, complete, sha);
    Str b = {0};
    str_puts(&b, "{\"__metadata__\":{");
    for (int i = 0; i < META_COUNT; i++) {
        if (i) str_puts(&b, ",");
        str_json(&b, m.key[i]);
        str_puts(&b, ":");
        str_json(&b, m.value[i]);
    }
    meta_free_(&m);
    const uint64_t n = (uint64_t)in->n;
    const uint64_t a = n * (uint64_t)in->L * (uint64_t)in->D * dtype_bytes_(in->dtype);
    char t[512];
    snprintf(t, sizeof t,
             "},\"annotations\":{\"dtype\":\"%s\",\"shape\":[%llu,%d,%d],\"data_offsets\":[0,%llu]},"
             "\"status\":{\"dtype\":\"U8\",\"shape\":[%llu],\"data_offsets\":[%llu,%llu]}}",
             featcache_dtype_name(in->dtype), (unsigned long long)n, in->L, in->D,
             (unsigned long long)a, (unsigned long long)n, (unsigned long long)a,
             (unsigned long long)(a + n));
    str_puts(&b, t);
    while ((8 + b.n) % 8) str_puts(&b, " ");
    unsigned char *out = xmalloc(8 + b.n);
    uint64_t hl = b.n;
    for (int i = 0; i < 8; i++) out[i] = (unsigned char)(hl >> (8 * i));
    memcpy(out + 8, b.s, b.n);
    *len = 8 + b.n;
    free(b.s);
    return out;
}

// The first recorded setting of f that differs from info's ("" when none does), for the
// refusal: "encoder.sha256 (file: X..., now: Y...)".
static void first_difference_(char *buf, size_t cap, const SafetensorsFile *f,
                              const FeatCacheInfo *in) {
    MetaList m;
    meta_build_(&m, in, 0, ZERO_SHA);
    buf[0] = 0;
    for (int i = 0; i < META_COUNT - 2 && !buf[0]; i++) {
        if (!strcmp(m.key[i], "images")) continue;  // images.sha256 says it shorter
        const char *v = safetensors_meta(f, m.key[i]);
        char q1[96], q2[96];
        if (!v || strcmp(v, m.value[i]))
            snprintf(buf, cap, "%s (file: '%s', now: '%s')", m.key[i],
                     v ? printable_(q1, v) : "missing", printable_(q2, m.value[i]));
    }
    meta_free_(&m);
    if (buf[0]) return;
    const SafetensorsTensor *t = safetensors_find(f, "annotations");
    if (!t || t->ndim != 3) {
        snprintf(buf, cap, "the annotations tensor");
        return;
    }
    if ((t->dtype == ST_F16) != (in->dtype == FEAT_F16))
        snprintf(buf, cap, "dtype (file: %s, now: %s)", safetensors_dtype_name(t->dtype),
                 featcache_dtype_name(in->dtype));
    else if (t->shape[0] != in->n || t->shape[1] != in->L || t->shape[2] != in->D)
        snprintf(buf, cap, "shape (file: %lld x %lld x %lld, now: %d x %d x %d)",
                 (long long)t->shape[0], (long long)t->shape[1], (long long)t->shape[2], in->n,
                 in->L, in->D);
    else
        snprintf(buf, cap, "the header layout");
}

static int pwrite_all_(int fd, const void *buf, size_t len, off_t off) {
    const unsigned char *p = buf;
    while (len) {
        ssize_t k = pwrite(fd, p, len, off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        p += k, len -= (size_t)k, off += k;
    }
    return 0;
}

static int pread_all_(int fd, void *buf, size_t len, off_t off) {
    unsigned char *p = buf;
    while (len) {
        ssize_t k = pread(fd, p, len, off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        p += k, len -= (size_t)k, off += k;
    }
    return 0;
}


// ---------------------------------------------------------------------------- writing

static size_t data_bytes_(const FeatCacheWriter *w) {
    return (size_t)w->n * w->row_bytes + (size_t)w->n;
}

// PATH exists: complete with the same settings (1), or refused (-1).
static int writer_check_complete_(FeatCacheWriter *w, Error *err) {
    FeatCache c;
    if (featcache_open(&c, w->path, err))
        return error_prefix(err, "an existing feature cache (remove it to start over)");
    size_t hl;
    unsigned char *want = header_build_(&hl, &w->info, 1, c.sha256);
    int same = c.len >= hl && !memcmp(c.base, want, hl);
    free(want);
    if (!same) {
        char diff[512];
        first_difference_(diff, sizeof diff, &c.st, &w->info);
        error_set(err, "%s: a feature cache made with other settings exists: %s; remove it or "
                       "give another --out", w->path, diff);
    }
    featcache_close(&c);
    return same ? 1 : -1;
}

// PATH.partial exists: resume it when its header is the one info gives.
static int writer_resume_(FeatCacheWriter *w, const unsigned char *want, size_t hl, Error *err) {
    int fd;
    size_t size;
    if (file_open_regular_fd(&fd, &size, w->partial, O_RDWR, err)) return -1;
    unsigned char *have = xmalloc(hl);
    const size_t need = hl + data_bytes_(w);
    // The header this extraction writes, as far as the file holds it.
    const size_t got = size < hl ? size : hl;
    const int header_same = size > 0 && pread_all_(fd, have, got, 0) == 0 && !memcmp(have, want, got);
    int same = header_same && size == need;
    free(have);
    if (header_same && size != need) {  // these settings, but not all the bytes they need
        close(fd);
        return error_set(err, "%s: %s: %zu bytes where an extraction with these settings has %zu "
                              "(cut short or damaged, e.g. a disk that filled up or a partial copy); "
                              "remove it and run the same command again to extract from the start",
                         w->partial, size < need ? "truncated" : "longer than it should be", size, need);
    }
    if (!same) {
        close(fd);
        SafetensorsFile f;
        char diff[512] = "its size or header";
        if (safetensors_open(&f, w->partial, err) == 0) {
            first_difference_(diff, sizeof diff, &f, &w->info);
            safetensors_free(&f);
        }
        return error_set(err, "%s: an interrupted extraction with other settings: %s; remove it "
                              "to start over, or resume with the same settings", w->partial, diff);
    }
    unsigned char *status = xmalloc((size_t)w->n + 1);
    if (pread_all_(fd, status, (size_t)w->n, (off_t)(hl + (size_t)w->n * w->row_bytes))) {
        free(status);
        close(fd);
        return error_set(err, "%s: read error", w->partial);
    }
    int first = (int)w->n;
    for (int i = 0; i < (int)w->n; i++)
        if (status[i] == FEAT_PENDING) {
            first = i;
            break;
        }
    free(status);
    w->start = first / w->info.batch * w->info.batch;
    w->fd = fd;
    return 0;
}

int featcache_writer_open(FeatCacheWriter *w, const char *path, const FeatCacheInfo *info,
                          Error *err) {
    memset(w, 0, sizeof *w);
    w->fd = -1;
    CHECK(info->n >= 1 && info->L >= 1 && info->D >= 1 && info->batch >= 1, "cache info");
    if (strlen(path) >= sizeof w->path) return error_set(err, "%s: path too long", path);
    snprintf(w->path, sizeof w->path, "%s", path);
    snprintf(w->partial, sizeof w->partial, "%s.partial", path);
    w->info = *info;
    w->n = info->n;
    w->row_bytes = (size_t)info->L * (size_t)info->D * dtype_bytes_(info->dtype);
    size_t hl;
    unsigned char *want = header_build_(&hl, info, 0, ZERO_SHA);
    w->header_bytes = hl;
    int r = 0;
    if (file_exists(w->path)) {
        r = writer_check_complete_(w, err);
        if (r == 1) {
            w->complete = 1;
            w->start = info->n;
            r = 0;
        }
    } else if (file_exists(w->partial)) {
        r = writer_resume_(w, want, hl, err);
    } else {
        w->fd = open(w->partial, O_RDWR | O_CREAT | O_TRUNC, 0644);
        if (w->fd < 0) {
            r = error_set(err, "%s: cannot create: %s", w->partial, strerror(errno));
        } else if (pwrite_all_(w->fd, want, hl, 0) ||
                   ftruncate(w->fd, (off_t)(hl + data_bytes_(w))) || fsync(w->fd)) {
            r = error_set(err, "%s: cannot write: %s", w->partial, strerror(errno));
        }
    }
    free(want);
    if (r) featcache_writer_close(w);
    else w->scratch = xmalloc(w->row_bytes * (size_t)info->batch);
    return r;
}

int featcache_partial_settings(const char *path, int *batch, int *threads, int *group) {
    char partial[1200];
    snprintf(partial, sizeof partial, "%s.partial", path);
    if (!file_exists(partial)) return 0;
    SafetensorsFile f;
    Error err;
    if (safetensors_open(&f, partial, &err)) return 0;
    const char *e = safetensors_meta(&f, "extraction");
    int ok = e && sscanf(e, "batch=%d threads=%d group=%d", batch, threads, group) == 3 &&
             *batch >= 1 && *threads >= 1 && *group >= 1;
    safetensors_free(&f);
    return ok;
}

int featcache_recorded_data(const char *path, char *buf, size_t cap) {
    char partial[1200];
    snprintf(partial, sizeof partial, "%s.partial", path);
    const char *file = file_exists(path) ? path : file_exists(partial) ? partial : NULL;
    SafetensorsFile f;
    Error err;
    if (!file || safetensors_open(&f, file, &err)) return 0;
    const char *d = safetensors_meta(&f, "data");
    int ok = d && strlen(d) < cap;
    if (ok) memcpy(buf, d, strlen(d) + 1);
    safetensors_free(&f);
    return ok;
}

static int finite_row_(const float *x, size_t n) {
    int ok = 1;
    for (size_t i = 0; i < n; i++) ok &= isfinite(x[i]) != 0;
    return ok;
}

int featcache_writer_put(FeatCacheWriter *w, int first, int count, const float *annot,
                         const unsigned char *status, Error *err) {
    CHECK(w->fd >= 0 && first >= 0 && count >= 0 && first + count <= w->n, "put %d+%d", first,
          count);
    const size_t per = (size_t)w->info.L * w->info.D;
    for (int done = 0; done < count;) {
        int k = count - done < w->info.batch ? count - done : w->info.batch;
        for (int j = 0; j < k; j++) {
            const float *src = annot + (size_t)(done + j) * per;
            unsigned char *dst = w->scratch + (size_t)j * w->row_bytes;
            int ok = status[done + j] == FEAT_OK;
            CHECK(ok || status[done + j] == FEAT_UNREADABLE, "status %d", status[done + j]);
            if (!ok) {
                memset(dst, 0, w->row_bytes);
            } else if (!finite_row_(src, per)) {
                return error_set(err, "%s: image %d: its annotations hold NaN or infinity",
                                 w->partial, first + done + j);
            } else if (w->info.dtype == FEAT_F32) {
                for (size_t q = 0; q < per; q++) {
                    uint32_t b;
                    memcpy(&b, &src[q], 4);
                    for (int y = 0; y < 4; y++) dst[4 * q + y] = (unsigned char)(b >> (8 * y));
                }
            } else {
                for (size_t q = 0; q < per; q++) {
                    uint16_t h = featcache_f32_to_f16(src[q]);
                    if ((h & 0x7c00u) == 0x7c00u)
                        return error_set(err, "%s: image %d: annotation value %g is beyond half "
                                              "precision (65504): extract with --dtype f32",
                                         w->partial, first + done + j, (double)src[q]);
                    dst[2 * q] = (unsigned char)h, dst[2 * q + 1] = (unsigned char)(h >> 8);
                }
            }
        }
        off_t off = (off_t)(w->header_bytes + (size_t)(first + done) * w->row_bytes);
        if (pwrite_all_(w->fd, w->scratch, (size_t)k * w->row_bytes, off))
            return error_set(err, "%s: write failed: %s", w->partial, strerror(errno));
        done += k;
    }
    // The annotations reach the disk before the status bytes that say they are there.
    if (fdatasync(w->fd) ||
        pwrite_all_(w->fd, status, (size_t)count,
                    (off_t)(w->header_bytes + (size_t)w->n * w->row_bytes + (size_t)first)))
        return error_set(err, "%s: write failed: %s", w->partial, strerror(errno));
    return 0;
}

int featcache_writer_finish(FeatCacheWriter *w, Error *err) {
    if (w->complete) return 0;
    CHECK(w->fd >= 0, "writer not open");
    const size_t total = data_bytes_(w), chunk = (size_t)1 << 20;
    unsigned char *buf = xmalloc(chunk);
    Sha256 s;
    sha256_init(&s);
    int r = 0;
    for (size_t done = 0; done < total && !r;) {
        size_t k = total - done < chunk ? total - done : chunk;
        if (pread_all_(w->fd, buf, k, (off_t)(w->header_bytes + done)))
            r = error_set(err, "%s: read error", w->partial);
        if (!r && done + k > (size_t)w->n * w->row_bytes) {  // the status bytes in this chunk
            size_t from = done > (size_t)w->n * w->row_bytes ? 0 : (size_t)w->n * w->row_bytes - done;
            for (size_t q = from; q < k && !r; q++)
                if (buf[q] == FEAT_PENDING)
                    r = error_set(err, "%s: image %zu was never extracted", w->partial,
                                  done + q - (size_t)w->n * w->row_bytes);
        }
        if (!r) sha256_update(&s, buf, k);
        done += k;
    }
    free(buf);
    if (r) return -1;
    unsigned char d[SHA256_DIGEST_BYTES];
    char hex[SHA256_HEX_CHARS + 1];
    sha256_final(&s, d);
    sha256_hex(hex, d);
    size_t hl;
    unsigned char *head = header_build_(&hl, &w->info, 1, hex);
    CHECK(hl == w->header_bytes, "header length changed");
    int e = 0;
    if (pwrite_all_(w->fd, head, hl, 0) || fsync(w->fd)) r = -1, e = errno ? errno : EIO;
    free(head);
    if (r) return error_set(err, "%s: write failed: %s", w->partial, strerror(e));
    close(w->fd);
    w->fd = -1;
    if (rename(w->partial, w->path))
        return error_set(err, "%s: cannot rename to %s: %s", w->partial, w->path, strerror(errno));
    // The rename itself must survive a crash too, as atomic_commit's does.
    if (file_sync_parent(w->path, err)) return -1;
    w->complete = 1;
    return 0;
}

void featcache_writer_close(FeatCacheWriter *w) {
    if (w->fd >= 0) close(w->fd);
    w->fd = -1;
    free(w->scratch);
    w->scratch = NULL;
}

// ---------------------------------------------------------------------------- reading

static int parse_ids_(FeatCache *c, const char *json, Error *err) {
    cJSON *root = cJSON_Parse(json);
    if (!root || !cJSON_IsArray(root)) {
        cJSON_Delete(root);
        return error_set(err, "%s: metadata 'images' is not a JSON array", c->name);
    }
    int n = cJSON_GetArraySize(root);
    if (n != c->n) {
        cJSON_Delete(root);
        return error_set(err, "%s: metadata 'images' lists %d images, the annotations hold %d",
                         c->name, n, c->n);
    }
    c->ids = xcalloc((size_t)n + 1, sizeof(char *));
    int i = 0;
    for (cJSON *it = root->child; it; it = it->next, i++) {
        if (!cJSON_IsString(it)) {
            cJSON_Delete(root);
            return error_set(err, "%s: metadata 'images'[%d] is not a string", c->name, i);
        }
        c->ids[i] = dup_(it->valuestring);
    }
    cJSON_Delete(root);
    char hex[SHA256_HEX_CHARS + 1];
    ids_sha_(hex, (const char *const *)c->ids, c->n);
    const char *want = safetensors_meta(&c->st, "images.sha256");
    if (!want || strcmp(want, hex))
        return error_set(err, "%s: the image list does not match its images.sha256", c->name);
    return 0;
}

static int is_hex64_(const char *s) {
    if (!s || strlen(s) != SHA256_HEX_CHARS) return 0;
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f'))) return 0;
    return 1;
}

// Everything above the safetensors checks, with c->st, base and len set.
// The metadata: format, version, the fields every cache has, the image size, whether the
// extraction finished (an unfinished one only with allow_partial) and the checksums.
static int check_metadata_(FeatCache *c, int allow_partial, Error *err) {
    const SafetensorsFile *f = &c->st;
    const char *fmt = safetensors_meta(f, "format"), *ver = safetensors_meta(f, "version");
    char q[96];
    if (!fmt || strcmp(fmt, FEATCACHE_FORMAT))
        return error_set(err, "%s: not a feature cache (format '%s', expected %s)", c->name,
                         fmt ? printable_(q, fmt) : "missing", FEATCACHE_FORMAT);
    if (!ver || strcmp(ver, FEATCACHE_VERSION))
        return error_set(err, "%s: feature cache version '%s' is not supported (this build "
                              "reads version %s)", c->name, ver ? printable_(q, ver) : "missing",
                         FEATCACHE_VERSION);
    static const char *const need[] = {"encoder", "encoder.sha256", "encoder.weights", "preprocess",
                                       "image_size", "data", "images", "images.sha256",
                                       "complete", "annotations.sha256"};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (!safetensors_meta(f, need[i]))
            return error_set(err, "%s: metadata '%s' missing", c->name, need[i]);
    c->encoder = safetensors_meta(f, "encoder");
    c->encoder_sha256 = safetensors_meta(f, "encoder.sha256");
    c->encoder_weights = safetensors_meta(f, "encoder.weights");
    c->preprocess = safetensors_meta(f, "preprocess");
    c->data = safetensors_meta(f, "data");
    c->sha256 = safetensors_meta(f, "annotations.sha256");
    const char *cs = safetensors_meta(f, "complete"), *is = safetensors_meta(f, "image_size");
    char *end;
    long S = strtol(is, &end, 10);
    if (end == is || *end || S < 1 || S > 65536)
        return error_set(err, "%s: metadata image_size '%s' is not a size", c->name, printable_(q, is));
    c->image_size = (int)S;
    if (strcmp(cs, "0") && strcmp(cs, "1"))
        return error_set(err, "%s: metadata complete '%s' is not 0 or 1", c->name, printable_(q, cs));
    c->complete = cs[0] == '1';
    if (!c->complete && !allow_partial)
        return error_set(err, "%s: an unfinished extraction (run caption features again to "
                              "finish it)", c->name);
    if (!is_hex64_(c->sha256) || !is_hex64_(c->encoder_sha256))
        return error_set(err, "%s: a checksum in the metadata is not 64 hex digits", c->name);
    return 0;
}

// The tensors: annotations (N, L, D) and status (N), their place in the mapped file and
// every image's status; then the image ids.
static int check_tensors_(FeatCache *c, Error *err) {
    const SafetensorsFile *f = &c->st;
    const SafetensorsTensor *a = safetensors_find(f, "annotations"), *s = safetensors_find(f, "status");
    if (!a || !s || f->count != 2)
        return error_set(err, "%s: expected exactly the tensors 'annotations' and 'status'", c->name);
    if (a->ndim != 3 || (a->dtype != ST_F16 && a->dtype != ST_F32))
        return error_set(err, "%s: 'annotations' must be (N, L, D) F16 or F32", c->name);
    if (s->ndim != 1 || s->dtype != ST_U8)
        return error_set(err, "%s: 'status' must be (N) U8", c->name);
    if (a->shape[0] != s->shape[0] || a->shape[0] < 1 || a->shape[0] > 1 << 30 ||
        a->shape[1] < 1 || a->shape[2] < 1 || a->shape[1] * a->shape[2] > 1 << 28)
        return error_set(err, "%s: tensor shapes %lld x %lld x %lld and %lld do not fit", c->name,
                         (long long)a->shape[0], (long long)a->shape[1], (long long)a->shape[2],
                         (long long)s->shape[0]);
    c->n = (int)a->shape[0];
    c->L = (int)a->shape[1];
    c->D = (int)a->shape[2];
    c->dtype = a->dtype == ST_F16 ? FEAT_F16 : FEAT_F32;
    // The data section starts after the 8-byte length and the header (safetensors checked
    // both lie inside the file and that the tensors' sizes match their shapes).
    uint64_t hl = 0;
    for (int i = 0; i < 8; i++) hl |= (uint64_t)c->base[i] << (8 * i);
    const unsigned char *data = c->base + 8 + hl;
    if ((8 + hl) % 2)
        return error_set(err, "%s: the data section is not aligned", c->name);
    c->annot = data + a->offset;
    c->status = data + s->offset;
    if (c->annot + (size_t)c->n * c->L * c->D * dtype_bytes_(c->dtype) > c->base + c->len ||
        c->status + c->n > c->base + c->len)
        return error_set(err, "%s: tensors run past the end of the file", c->name);
    for (int i = 0; i < c->n; i++) {
        if (c->status[i] > FEAT_UNREADABLE || (c->complete && c->status[i] == FEAT_PENDING))
            return error_set(err, "%s: image %d has status %d", c->name, i, c->status[i]);
    }
    if (c->dtype == FEAT_F32 && ((uintptr_t)c->annot % 4))
        return error_set(err, "%s: F32 annotations are not aligned", c->name);
    return parse_ids_(c, safetensors_meta(f, "images"), err);
}

static int check_(FeatCache *c, int allow_partial, Error *err) {
    return check_metadata_(c, allow_partial, err) || check_tensors_(c, err) ? -1 : 0;
}

int featcache_open_memory(FeatCache *c, const unsigned char *bytes, size_t len, const char *name,
                          int allow_partial, Error *err) {
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    if (safetensors_open_memory(&c->st, bytes, len, name, err)) return -1;
    c->base = bytes;
    c->len = len;
    if (check_(c, allow_partial, err)) {
        featcache_close(c);
        return -1;
    }
    return 0;
}

int featcache_open(FeatCache *c, const char *path, Error *err) {
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", path);
    if (safetensors_open(&c->st, path, err)) return -1;
    int fd;
    size_t size;
    if (file_open_regular_fd(&fd, &size, path, O_RDONLY, err)) {
        safetensors_free(&c->st);
        return -1;
    }
    void *p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) {
        safetensors_free(&c->st);
        return error_set(err, "%s: cannot map %zu bytes: %s", path, size, strerror(e));
    }
    c->base = p;
    c->len = size;
    c->mapped = 1;
    if (check_(c, 0, err)) {
        featcache_close(c);
        return -1;
    }
    return 0;
}

void featcache_close(FeatCache *c) {
    if (c->mapped && c->base) munmap((void *)c->base, c->len);
    if (c->ids)
        for (int i = 0; i < c->n && c->ids[i]; i++) free(c->ids[i]);
    free(c->ids);
    safetensors_free(&c->st);
    memset(c, 0, sizeof *c);
}

int featcache_verify(const FeatCache *c, Error *err) {
    Sha256 s;
    sha256_init(&s);
    const size_t a = (size_t)c->n * c->L * c->D * dtype_bytes_(c->dtype);
    sha256_update(&s, c->annot, a);
    sha256_update(&s, c->status, (size_t)c->n);
    unsigned char d[SHA256_DIGEST_BYTES];
    char hex[SHA256_HEX_CHARS + 1];
    sha256_final(&s, d);
    sha256_hex(hex, d);
    if (strcmp(hex, c->sha256))
        return error_set(err, "%s: checksum mismatch: the annotations hash to %.16s..., the header "
                              "says %.16s... (a damaged file: extract again)", c->name, hex, c->sha256);
    return 0;
}

int featcache_read(const FeatCache *c, int i, float *out, Error *err) {
    CHECK(i >= 0 && i < c->n, "image %d of %d", i, c->n);
    const size_t per = (size_t)c->L * c->D;
    size_t bad = 0;  // values that are NaN or infinite
    if (c->dtype == FEAT_F32) {
        memcpy(out, c->annot + (size_t)i * per * 4, per * 4);
        for (size_t q = 0; q < per; q++) bad += !isfinite(out[q]);
    } else {
        const unsigned char *p = c->annot + (size_t)i * per * 2;
        for (size_t q = 0; q < per; q++) {
            uint16_t h = (uint16_t)(p[2 * q] | p[2 * q + 1] << 8);
            bad += (h & 0x7C00) == 0x7C00;  // all exponent bits: infinity or NaN
            out[q] = safetensors_f16_to_f32(h);
        }
    }
    if (!bad) return 0;
    return error_set(err, "%s: image %s (%d of %d): %zu of its %zu annotation values are NaN or "
                          "infinite (a damaged cache: extract it again with caption features)",
                     c->name, c->ids && c->ids[i] ? c->ids[i] : "?", i + 1, c->n, bad, per);
}

void featcache_get(const FeatCache *c, int i, float *out) { (void)featcache_read(c, i, out, NULL); }
