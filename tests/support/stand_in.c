// stand_in.c: see stand_in.h.
#include "tests/support/stand_in.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/scratch.h"

int stand_in_write(const char *dir, const char *name, const char *body) {
    char path[1024];
    snprintf(path, sizeof path, "%s/bin", dir);
    if (mkdir(path, 0755) != 0 && access(path, F_OK) != 0) {
        perror(path);
        return -1;
    }
    snprintf(path, sizeof path, "%s/called.txt", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/bin/%s", dir, name);
    FILE *fp = fopen(path, "w");
    if (!fp) {
        perror(path);
        return -1;
    }
    // dir quoted for the shell: the scratch folder's name has no single quote
    fprintf(fp, "#!/bin/sh\ndir='%s'\necho \"$*\" >> \"$dir/called.txt\"\n%s", dir, body);
    if (fclose(fp) != 0 || chmod(path, 0755) != 0) {
        perror(path);
        return -1;
    }
    return 0;
}

int stand_in_run(const char *dir, const char *bin, const char *env, const char *script_args) {
    char bin_dir[1024], cmd[8192];
    snprintf(bin_dir, sizeof bin_dir, "%s/bin", dir);
    snprintf(cmd, sizeof cmd,
             "%s ATTEND_BIN=%s RUNS=%s/runs RESULTS=%s/results.md sh experiments/%s > %s/out.txt "
             "2> %s/err.txt",
             env, bin ? bin : bin_dir, dir, dir, script_args, dir, dir);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

char *stand_in_read(const char *dir, const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return scratch_read_text(path, NULL);
}

int stand_in_count_rows(const char *text) {
    int rows = text && strncmp(text, "| 2", 3) == 0;
    for (const char *p = text; p && (p = strstr(p, "\n| 2")); p++) rows++;
    return rows;
}

const char *stand_in_last_row(const char *text, char *buf, size_t cap) {
    buf[0] = 0;
    const char *last = text && strncmp(text, "| 2", 3) == 0 ? text : NULL;
    for (const char *p = text; p && (p = strstr(p, "\n| 2")); p++) last = p + 1;
    if (!last) return buf;
    const char *end = strchr(last, '\n');
    size_t n = end ? (size_t)(end - last) : strlen(last);
    if (n >= cap) n = cap - 1;
    memcpy(buf, last, n);
    buf[n] = 0;
    return buf;
}
