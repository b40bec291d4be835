// eval_record.h: draw eval --per-image files (cli/draw_eval_record.h) as a kill leaves them,
// for the tests of an evaluation that goes on from one.
#ifndef TESTS_SUPPORT_EVAL_RECORD_H
#define TESTS_SUPPORT_EVAL_RECORD_H

// Writes path: record (a finished file's text) up to its "done" line, "done DONE", the
// columns' line and the first `rows` image lines of record. Returns 0, or -1 after printing
// why.
int eval_record_cut(const char *record, const char *path, int done, int rows);

#endif
