// fuzz_util.c: see fuzz_util.h.
#include "tests/fuzz/fuzz_util.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


void fuzz_require_error(const Error *err, const char *name) {
    size_t n = strnlen(err->msg, sizeof err->msg);
    fuzz_require(n > 0 && n < sizeof err->msg, "failure without a message");
    fuzz_require(strchr(err->msg, '\n') == NULL, "message of more than one line: %s", err->msg);
    if (name) {
        size_t k = strlen(name);
        fuzz_require(strncmp(err->msg, name, k) == 0 && err->msg[k] == ':',
                     "message does not start with \"%s:\": %s", name, err->msg);
    }
}

static char tmpdir_[256];

// Removes path and, for a folder, everything under it (links are not followed).
static void remove_tree(const char *path, int depth) {
    struct stat st;
    if (lstat(path, &st) != 0) return;
    if (S_ISDIR(st.st_mode) && depth < 8) {
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char sub[1024];
            if (snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) < (int)sizeof sub)
                remove_tree(sub, depth + 1);
        }
        if (d) closedir(d);
    }
    remove(path);
}

static void remove_tmpdir(void) {
    if (tmpdir_[0]) remove_tree(tmpdir_, 0);
}

void fuzz_require(int cond, const char *fmt, ...) {
    if (cond) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fuzz property violated: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    remove_tmpdir();  // abort() skips the atexit clean-up
    abort();
}

const char *fuzz_tmpdir(void) {
    if (tmpdir_[0]) return tmpdir_;
    struct stat st;
    const char *base = getenv("TMPDIR");
    if (!base || !*base)
        base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
    snprintf(tmpdir_, sizeof tmpdir_, "%s/attend_fuzz_XXXXXX", base);
    if (!mkdtemp(tmpdir_)) {
        perror(tmpdir_);
        abort();
    }
    atexit(remove_tmpdir);
    return tmpdir_;
}

const char *fuzz_tmp_path(const char *name) {
    static char buf[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", fuzz_tmpdir(), name);
    return buf[k];
}

void fuzz_write_file(const char *path, const void *data, size_t len) {
    FILE *fp = fopen(path, "wb");
    if (!fp || (len && fwrite(data, 1, len, fp) != len) || fclose(fp) != 0) {
        perror(path);
        abort();
    }
}

void fuzz_require_block_is_file(const Block *b, const SafetensorsFile *f) {
    fuzz_require(b->count >= 1 && b->data, "a loaded model without parameters");
    for (int i = 0; i < b->count; i++) {
        const SafetensorsTensor *t = safetensors_find(f, b->tensors[i].name);
        fuzz_require(t && t->numel == b->tensors[i].numel && t->data, "tensor %s",
                     b->tensors[i].name);
        fuzz_require(memcmp(b->data + b->tensors[i].offset, t->data,
                            t->numel * sizeof(float)) == 0,
                     "the loaded %s differs from the file's", t->name);
    }
}
