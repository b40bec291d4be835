// eval_record.c: draw eval --per-image files as a kill leaves them (tests/support/eval_record.h).
#include "tests/support/eval_record.h"

#include <stdio.h>
#include <string.h>

int eval_record_cut(const char *record, const char *path, int done, int rows) {
    const char *d = strstr(record, "\ndone ");
    const char *columns = d ? strchr(d + 1, '\n') : NULL;
    const char *body = columns ? strchr(columns + 1, '\n') : NULL;
    FILE *f = body ? fopen(path, "w") : NULL;
    if (!f) {
        printf("eval_record_cut: %s: %s\n", path, body ? "cannot write" : "not a finished record");
        return -1;
    }
    body++;  // the first image's line
    const char *end = body;
    for (int i = 0; i < rows && end && *end; i++) end = strchr(end, '\n'), end = end ? end + 1 : NULL;
    if (!end) end = body + strlen(body);
    fprintf(f, "%.*s\ndone %d\nimage reconstruction kl iw\n", (int)(d - record), record, done);
    fwrite(body, 1, (size_t)(end - body), f);
    return fclose(f) == 0 ? 0 : -1;
}
