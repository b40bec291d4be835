// log_csv.h: reading a training run's log.csv (cli/train_run's rows) in tests that compare
// two runs' curves, such as N ranks against one process.
//
//     double loss[64];
//     int rows = log_csv_column(dir, "run", 1, loss, 64);   // column 1 of DIR/run/log.csv
#ifndef TESTS_SUPPORT_LOG_CSV_H
#define TESTS_SUPPORT_LOG_CSV_H

// Column col (0 the first) of DIR/RUN/log.csv, from the rows after the header that have a
// value there (an empty field is skipped), into out (n at most); returns how many were read
// (0 when the file cannot be read).
int log_csv_column(const char *dir, const char *run, int col, double *out, int n);

#endif
