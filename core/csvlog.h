// csvlog.h: training metrics as CSV, one row per logged step, flushed each row.
#ifndef CORE_CSVLOG_H
#define CORE_CSVLOG_H

#include <stdio.h>

#include "core/error.h"

typedef struct {
    FILE *fp;
    int n_cols;
} CsvLog;

// Opens path; append = 1 keeps existing rows (for --resume) and writes the header
// only when the file is new or empty. columns: comma-separated header (at most 64).
// An existing file under another header (a run begun by a build that logged other
// columns) is first rewritten under this one, atomically: each old column moves to the
// new column of its name, a column new to the header is empty in the old rows, and a
// file with a column this header lacks is refused ("PATH: its column 'X' is not one
// this program logs ..."), since rewriting it would lose that column.
// A last line without its newline (a row cut short) is dropped in that rewrite.
int csvlog_open(CsvLog *log, const char *path, const char *columns, int append, Error *err);
// A resumed run's log (append): as csvlog_open, and the rows whose step (the first
// column) is past through_step, the step of the checkpoint the run resumes from, are
// dropped first (written by the interrupted run after its last checkpoint; they would be
// written again), the file rewritten atomically. A row cut short is dropped too.
int csvlog_open_resume(CsvLog *log, const char *path, const char *columns, long through_step,
                       Error *err);
// Writes one row of n values (n must equal the column count); empty cells for NAN.
void csvlog_row(CsvLog *log, const double *values, int n);
void csvlog_close(CsvLog *log);

#endif
