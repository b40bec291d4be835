#include "core/csvlog.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "core/check.h"

int csvlog_open(CsvLog *log, const char *path, const char *columns, int append, Error *err) {
    memset(log, 0, sizeof *log);
    CHECK(columns && columns[0], "csvlog_open: no columns");
    log->fp = fopen(path, append ? "a" : "w");
    if (!log->fp) return error_set(err, "%s: cannot write: %s", path, strerror(errno));
    log->n_cols = 1;
    for (const char *c = columns; *c; c++) log->n_cols += *c == ',';
    // In append mode the position starts at the end: 0 means a new or empty file.
    if (fseek(log->fp, 0, SEEK_END) != 0 || ftell(log->fp) == 0) {
        if (fprintf(log->fp, "%s\n", columns) < 0 || fflush(log->fp) != 0) {
            int e = errno;
            fclose(log->fp);
            log->fp = NULL;
            return error_set(err, "%s: cannot write: %s", path, strerror(e));
        }
    }
    return 0;
}

void csvlog_row(CsvLog *log, const double *values, int n) {
    CHECK(log->fp, "csvlog_row on a closed log");
    CHECK(n == log->n_cols, "csvlog_row: %d values for %d columns", n, log->n_cols);
    for (int i = 0; i < n; i++) {
        if (i) fputc(',', log->fp);
        if (!isnan(values[i])) fprintf(log->fp, "%.9g", values[i]);
    }
    fputc('\n', log->fp);
    fflush(log->fp);  // a crashed run keeps every row written so far
}

void csvlog_close(CsvLog *log) {
    if (log->fp) fclose(log->fp);
    log->fp = NULL;
}
