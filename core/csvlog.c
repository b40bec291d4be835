#include "core/csvlog.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/fileio.h"

enum { MAX_COLS = 64 };

// Splits a line (ending at '\n' or 0) into at most MAX_COLS comma-separated cells without
// copying: cell[i] points at its text in line, len[i] is its length. Returns the cell
// count, or -1 when there are more than MAX_COLS.
static int split_cells(const char *line, const char **cell, size_t *len) {
    int n = 0;
    for (const char *p = line;; p++) {
        const char *start = p;
        while (*p && *p != ',' && *p != '\n') p++;
        if (n == MAX_COLS) return -1;
        cell[n] = start, len[n++] = (size_t)(p - start);
        if (*p != ',') return n;
    }
}

static int find_cell(const char *name, size_t name_len, const char *const *cell, const size_t *len,
                     int n) {
    for (int i = 0; i < n; i++)
        if (len[i] == name_len && memcmp(cell[i], name, name_len) == 0) return i;
    return -1;
}

// Writes one row of text cells: column j of the new header gets the old row's cell
// old_of[j] (empty when -1 or past the row's end).
static void write_moved_row(FILE *fp, const char *const *cell, const size_t *len, int n_cells,
                            const int *old_of, int n_new) {
    for (int j = 0; j < n_new; j++) {
        if (j) fputc(',', fp);
        int i = old_of[j];
        if (i >= 0 && i < n_cells) fwrite(cell[i], 1, len[i], fp);
    }
    fputc('\n', fp);
}

// Whether a row (its cells) is one to keep on a resume at through_step: its first cell
// (the step) is not a number above it. A row whose step does not parse is kept.
static bool row_kept(const char *const *cell, const size_t *len, int n, long through_step) {
    if (n < 1 || len[0] == 0 || len[0] > 30) return true;
    char num[32];
    memcpy(num, cell[0], len[0]);
    num[len[0]] = 0;
    char *end;
    double step = strtod(num, &end);
    return *end != 0 || !(step > (double)through_step);
}

// Rewrites text (a log) under `columns` into path: each old column goes to the new column
// of the same name, and a new column is empty in the old rows. A column the new header
// lacks would be lost, so that is refused. Rows past through_step are dropped, and so is a
// last line without its newline (a row cut short by a kill or a full disk).
static int rewrite_under(const char *path, const char *text, const char *columns,
                         long through_step, Error *err) {
    const char *old[MAX_COLS], *new[MAX_COLS];
    size_t old_len[MAX_COLS], new_len[MAX_COLS];
    int n_old = split_cells(text, old, old_len), n_new = split_cells(columns, new, new_len);
    CHECK(n_new > 0, "csvlog: more than %d columns", MAX_COLS);
    if (n_old < 0) return error_set(err, "%s: more than %d columns in its header", path, MAX_COLS);
    int old_of[MAX_COLS];
    for (int j = 0; j < n_new; j++) old_of[j] = find_cell(new[j], new_len[j], old, old_len, n_old);
    for (int i = 0; i < n_old; i++)
        if (find_cell(old[i], old_len[i], new, new_len, n_new) < 0)
            return error_set(err, "%s: its column '%.*s' is not one this program logs (%s); move the file aside to resume",
                             path, (int)old_len[i], old[i], columns);
    AtomicFile f;
    if (atomic_open(&f, path, err)) return -1;
    fprintf(f.fp, "%s\n", columns);
    const char *line = strchr(text, '\n');
    for (int row = 2; line && line[1]; row++) {
        line++;
        if (!strchr(line, '\n')) break;  // torn: the row was never finished
        const char *cell[MAX_COLS];
        size_t len[MAX_COLS];
        int n = split_cells(line, cell, len);
        if (n < 0 || n > n_old) {
            atomic_abort(&f);
            return error_set(err, "%s: line %d has more cells than its header's %d", path, row, n_old);
        }
        if (row_kept(cell, len, n, through_step)) write_moved_row(f.fp, cell, len, n, old_of, n_new);
        line = strchr(line, '\n');
    }
    return atomic_commit(&f, err);
}

// Whether text (after its header line) holds a row past through_step or a torn last line.
static bool needs_trim(const char *text, long through_step) {
    for (const char *line = strchr(text, '\n'); line && line[1]; line = strchr(line, '\n')) {
        line++;
        if (!strchr(line, '\n')) return true;
        const char *cell[MAX_COLS];
        size_t len[MAX_COLS];
        int n = split_cells(line, cell, len);
        if (n > 0 && !row_kept(cell, len, n, through_step)) return true;
    }
    return false;
}

// An existing log (path, opened to append) whose first line is not `columns` (a run
// started by a build that logged other columns), or which holds rows past through_step
// (written after the checkpoint a resumed run starts from): rewritten under the new header
// without those rows, so that every row of the file has the same columns and no step
// appears twice.
static int adopt_header(const char *path, const char *columns, long through_step, Error *err) {
    unsigned char *data = NULL;
    size_t len = 0;
    if (file_read_all(path, &data, &len, 0, err)) return -1;
    const char *text = (const char *)data;
    if (len == 0) {  // empty: csvlog_open writes the header
        free(data);
        return 0;
    }
    size_t header_len = strcspn(text, "\n");
    int rc = 0;
    if (header_len != strlen(columns) || memcmp(text, columns, header_len) != 0 ||
        needs_trim(text, through_step))
        rc = rewrite_under(path, text, columns, through_step, err);
    free(data);
    return rc;
}

static int open_log(CsvLog *log, const char *path, const char *columns, int append,
                    long through_step, Error *err) {
    memset(log, 0, sizeof *log);
    CHECK(columns && columns[0], "csvlog_open: no columns");
    log->n_cols = 1;
    for (const char *c = columns; *c; c++) log->n_cols += *c == ',';
    CHECK(log->n_cols <= MAX_COLS, "csvlog_open: %d columns, at most %d", log->n_cols, MAX_COLS);
    if (append && file_exists(path) && adopt_header(path, columns, through_step, err)) return -1;
    log->fp = fopen(path, append ? "a" : "w");
    if (!log->fp) return error_set(err, "%s: cannot write: %s", path, strerror(errno));
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

int csvlog_open(CsvLog *log, const char *path, const char *columns, int append, Error *err) {
    return open_log(log, path, columns, append, LONG_MAX, err);
}

int csvlog_open_resume(CsvLog *log, const char *path, const char *columns, long through_step,
                       Error *err) {
    return open_log(log, path, columns, 1, through_step, err);
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
