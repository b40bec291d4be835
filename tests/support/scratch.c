// scratch.c: see scratch.h.
#include "tests/support/scratch.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/fileio.h"

int scratch_make(char *dir, size_t cap, const char *prefix) {
    const char *base = getenv("TMPDIR");
    snprintf(dir, cap, "%s/%s_XXXXXX", base && base[0] ? base : "/tmp", prefix);
    if (!mkdtemp(dir)) {
        perror(dir);
        return -1;
    }
    return 0;
}

void scratch_remove(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return;
    if (!S_ISDIR(st.st_mode)) {
        unlink(path);
        return;
    }
    chmod(path, 0700);
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char sub[1024];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        scratch_remove(sub);
    }
    if (d) closedir(d);
    rmdir(path);
}

// s->program: program in $ATTEND_BIN (default "bin").
static void set_program(Scratch *s, const char *program) {
    const char *bin = getenv("ATTEND_BIN");
    snprintf(s->program, sizeof s->program, "%s/%s", bin && bin[0] ? bin : "bin", program);
}

Scratch scratch_for_program(const Scratch *s, const char *program) {
    Scratch t = *s;
    set_program(&t, program);
    return t;
}

int scratch_open(Scratch *s, const char *prefix, const char *program) {
    memset(s, 0, sizeof *s);
    if (scratch_make(s->dir, sizeof s->dir, prefix)) return -1;
    set_program(s, program);
    snprintf(s->out_path, sizeof s->out_path, "%s/stdout.txt", s->dir);
    snprintf(s->err_path, sizeof s->err_path, "%s/stderr.txt", s->dir);
    return 0;
}

int scratch_run(const Scratch *s, const char *fmt, ...) {
    char args[4096], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "%s %s > %s 2> %s", s->program, args, s->out_path, s->err_path);
    int st = system(cmd);
    if (st == -1 || !WIFEXITED(st)) return -1;
    return WEXITSTATUS(st);
}

const char *scratch_mpirun(void) {
    const char *m = getenv("ATTEND_MPIRUN");
    return m && m[0] ? m : "sh tests/mpirun_local.sh";
}

int scratch_run_mpi(const Scratch *s, int np, const char *fmt, ...) {
    char args[4096], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    // Open MPI's own allocations are never freed and its plug-ins are unloaded before a
    // leak check could name them, so under `make check` the ranks check everything but leaks
    // (the same code paths run leak-checked in the one-process tests).
    const char *asan = getenv("ASAN_OPTIONS");
    snprintf(cmd, sizeof cmd, "ASAN_OPTIONS='%s:detect_leaks=0' %s -np %d %s %s > %s 2> %s",
             asan ? asan : "", scratch_mpirun(), np, s->program, args, s->out_path, s->err_path);
    int st = system(cmd);
    if (st == -1 || !WIFEXITED(st)) return -1;
    return WEXITSTATUS(st);
}

char *scratch_read_text(const char *path, size_t *len) {
    unsigned char *d = NULL;
    size_t n = 0;
    if (len) *len = 0;
    if (file_read_all(path, &d, &n, 0, NULL)) return NULL;
    if (len) *len = n;
    return (char *)d;
}

int scratch_write_text(const char *path, const char *text) {
    Error err;
    if (file_write_atomic(path, text, strlen(text), &err) == 0) return 0;
    fprintf(stderr, "%s\n", err.msg);
    return -1;
}

int scratch_append_text(const char *path, const char *text) {
    FILE *fp = fopen(path, "ab");
    int bad = !fp || fputs(text, fp) == EOF;
    if (fp && fclose(fp)) bad = 1;
    if (bad) perror(path);
    return bad ? -1 : 0;
}

char *scratch_read(const Scratch *s, const char *name, size_t *len) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", s->dir, name);
    return scratch_read_text(path, len);
}

int scratch_exists(const Scratch *s, const char *fmt, ...) {
    char rel[600], path[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rel, sizeof rel, fmt, ap);
    va_end(ap);
    snprintf(path, sizeof path, "%s/%s", s->dir, rel);
    return file_exists(path);
}

int scratch_count_lines(const char *s) {
    int n = 0;
    for (; s && *s; s++) n += *s == '\n';
    return n;
}
