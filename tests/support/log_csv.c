#include "tests/support/log_csv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/scratch.h"

int log_csv_column(const char *dir, const char *run, int col, double *out, int n) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s/log.csv", dir, run);
    char *log = scratch_read_text(path, NULL);
    int k = 0;
    for (char *line = log ? strchr(log, '\n') : NULL; line && line[1] && k < n;
         line = strchr(line + 1, '\n')) {
        const char *f = line + 1;
        for (int c = 0; c < col && f; c++) {
            f = strpbrk(f, ",\n");
            f = f && *f == ',' ? f + 1 : NULL;
        }
        if (f && *f != ',' && *f != '\n') out[k++] = strtod(f, NULL);
    }
    free(log);
    return k;
}
