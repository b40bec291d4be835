// draw_eval_record.c: each image's figures of a draw eval, kept in a file (cli/draw_eval_record.h).
#include "cli/draw_eval_record.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/fileio.h"

#define RECORD_MAGIC "draw eval per-image figures"
#define RECORD_COLUMNS "image reconstruction kl iw"
#define RECORD_MAX_BYTES ((size_t)1 << 30)

void draw_eval_digest(char hex[SHA256_HEX_CHARS + 1], const float *x, size_t n) {
    Sha256 s;
    unsigned char d[SHA256_DIGEST_BYTES];
    sha256_init(&s);
    sha256_update(&s, x, n * sizeof *x);
    sha256_final(&s, d);
    sha256_hex(hex, d);
}

// The header's lines after the magic, as "key value" with id's values.
enum { HEADER_KEYS = 6, VALUE_CHARS = SHA256_HEX_CHARS + 1 };
static void header_values(const DrawEvalIdentity *id, char values[HEADER_KEYS][VALUE_CHARS]) {
    snprintf(values[0], VALUE_CHARS, "%s", id->weights_sha256);
    snprintf(values[1], VALUE_CHARS, "%d", id->images);
    snprintf(values[2], VALUE_CHARS, "%s", id->images_sha256);
    snprintf(values[3], VALUE_CHARS, "%d", id->samples);
    snprintf(values[4], VALUE_CHARS, "%ld", id->seed);
    snprintf(values[5], VALUE_CHARS, "%d", id->batch);
}
static const char *const HEADER_KEY[HEADER_KEYS] = {"weights-sha256", "images", "images-sha256",
                                                    "samples", "seed", "batch"};

// The next line of *s (its newline replaced by 0), or NULL at the end; a last line without
// its newline is one (a file is written whole, so it is still read strictly).
static char *next_line(char **s) {
    if (!**s) return NULL;
    char *line = *s, *nl = strchr(line, '\n');
    if (nl) *nl = 0, *s = nl + 1;
    else *s = line + strlen(line);
    return line;
}

// "key value" of the header with this key; *value points into line.
static int header_line(const char *path, int number, char *line, const char *key, char **value,
                       Error *err) {
    size_t k = strlen(key);
    if (!line || strncmp(line, key, k) != 0 || line[k] != ' ')
        return error_set(err, "%s: line %d: expected \"%s ...\": not a draw eval --per-image file",
                         path, number, key);
    *value = line + k + 1;
    return 0;
}

// One image's line: "index recon kl iw", finite figures.
static int image_line(const char *path, int number, char *line, int index, double *fig,
                      Error *err) {
    int got = -1, used = 0;
    if (!line || sscanf(line, "%d %lf %lf %lf%n", &got, &fig[0], &fig[1], &fig[2], &used) != 4 ||
        line[used] != 0 || got != index || !isfinite(fig[0]) || !isfinite(fig[1]) ||
        !isfinite(fig[2]))
        return error_set(err, "%s: line %d: expected image %d's figures (index, reconstruction, "
                         "KL, IW estimate: finite numbers)", path, number, index);
    return 0;
}

static int record_parse(DrawEvalRecord *p, char *text, Error *err) {
    const char *path = p->path;
    char *s = text, *line = next_line(&s), *value = NULL;
    int number = 1;
    if (!line || strcmp(line, RECORD_MAGIC) != 0)
        return error_set(err, "%s: does not start with \"%s\": not a draw eval --per-image file",
                         path, RECORD_MAGIC);
    char want[HEADER_KEYS][VALUE_CHARS];
    header_values(&p->id, want);
    for (int k = 0; k < HEADER_KEYS; k++) {
        if (header_line(path, ++number, next_line(&s), HEADER_KEY[k], &value, err)) return -1;
        if (strcmp(value, want[k]) != 0)
            return error_set(err, "%s: made by another evaluation (%s %s, this one's %s): "
                             "remove it to start this one over", path, HEADER_KEY[k], value, want[k]);
    }
    if (header_line(path, ++number, next_line(&s), "done", &value, err)) return -1;
    char *end;
    long done = strtol(value, &end, 10);
    const int n = p->id.images, B = p->id.batch;
    if (*end || end == value || done < 0 || done > n || (done % B != 0 && done != n))
        return error_set(err, "%s: line %d: done %s: not a count of whole batches of %d up to %d",
                         path, number, value, B, n);
    if (!(line = next_line(&s)) || strcmp(line, RECORD_COLUMNS) != 0)
        return error_set(err, "%s: line %d: expected \"%s\": not a draw eval --per-image file",
                         path, number + 1, RECORD_COLUMNS);
    number++;
    for (int i = 0; i < done; i++)
        if (image_line(path, ++number, next_line(&s), i, p->fig + (size_t)i * 3, err)) return -1;
    if (next_line(&s))
        return error_set(err, "%s: line %d: more than the %ld images it says are done", path,
                         number + 1, done);
    p->done = (int)done;
    return 0;
}

int draw_eval_record_open(DrawEvalRecord *p, const char *path, const DrawEvalIdentity *id,
                           int read, Error *err) {
    CHECK(id->images >= 1 && id->batch >= 1 && id->samples >= 1);
    *p = (DrawEvalRecord){.path = path, .id = *id};
    p->fig = xcalloc((size_t)id->images * 3, sizeof *p->fig);
    if (!read || !file_exists(path)) return 0;
    unsigned char *text;
    size_t len;
    if (file_read_all(path, &text, &len, RECORD_MAX_BYTES, err)) return -1;
    int rc = memchr(text, 0, len) ? error_set(err, "%s: holds a NUL byte: not a draw eval "
                                              "--per-image file", path)
                                  : record_parse(p, (char *)text, err);
    free(text);
    if (rc) {
        p->done = 0;
        memset(p->fig, 0, sizeof *p->fig * (size_t)id->images * 3);
    }
    return rc;
}

int draw_eval_record_save(DrawEvalRecord *p, int done, Error *err) {
    CHECK(done >= 0 && done <= p->id.images);
    AtomicFile f;
    if (atomic_open(&f, p->path, err)) return -1;
    char want[HEADER_KEYS][VALUE_CHARS];
    header_values(&p->id, want);
    fprintf(f.fp, "%s\n", RECORD_MAGIC);
    for (int k = 0; k < HEADER_KEYS; k++) fprintf(f.fp, "%s %s\n", HEADER_KEY[k], want[k]);
    fprintf(f.fp, "done %d\n%s\n", done, RECORD_COLUMNS);
    for (int i = 0; i < done; i++) {
        const double *v = p->fig + (size_t)i * 3;
        fprintf(f.fp, "%d %.17g %.17g %.17g\n", i, v[0], v[1], v[2]);
    }
    if (atomic_commit(&f, err)) return -1;
    p->done = done;
    return 0;
}

void draw_eval_record_free(DrawEvalRecord *p) {
    free(p->fig);
    p->fig = NULL;
}
